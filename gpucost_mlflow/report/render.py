"""The decision report: one model of the content, written as Markdown and as a self-contained HTML page.

Every table is built once (`Table`) and written both ways. A long string that would widen a column, or repeat
down it (a memory counter, why an MFU is empty, why a device is not priced), becomes a numbered footnote under
its table; identical strings share one number. Run ids link to the run's page in the MLflow UI (`run_href`).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import quote

import pandas as pd

from gpucost_mlflow.core.measurement.stats import Separation
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.core.money.decision import Assessment, Choice
from gpucost_mlflow.report import scope
from gpucost_mlflow.report.tables import Summary
from gpucost_mlflow.tracking.ui import LOCAL_UI

FOLD = 28  # characters: a longer string in a cell becomes its head and a footnote


@dataclass
class Report:
    experiment: str
    question: str
    protocol_digest: str
    catalog: str
    decision: str
    warnings: list[str]
    attempts: pd.DataFrame
    summaries: list[Summary]
    separations: list[tuple[str, Separation]]
    assessments: list[Assessment]
    deadline: str
    plan: dict | None
    choice: Choice = field(default_factory=Choice)  # the one choice made of the assessments (build), read by the tables
    figures: dict = field(default_factory=dict)
    break_evens: list[str] = field(default_factory=list)
    overhead: tuple = (None, 0)  # median harness overhead per attempt (s), attempts counted
    other_costs: tuple = ()
    example_prices: bool = False
    exclusions: list = field(default_factory=list)  # VariantExclusions, one per variant (PROTOCOL.md §6)
    exclusion_rule: str = ""
    passes_per_variant: int | None = None  # the protocol's, named in the per-configuration header
    experiment_id: str = ""  # for run links; without it they use the UI's direct route #/runs/<id>
    ui_root: str = LOCAL_UI  # the MLflow UI run links open: the tracking server, else where `mlflow ui` serves by default
    rejudged: list[str] = field(default_factory=list)  # pending passes `gpucost report` judged first, one line each
    what_if: str = ""  # 'what-if protocol other.yaml (changed deadline)' when decided under another protocol than the lock
    what_if_digest: str = ""  # that protocol's digest, shown beside the locked one (protocol_digest)

    @property
    def title(self) -> str:
        """The page title; a what-if protocol says so first, a what-if catalog of example prices in it."""
        kind = "Decision report (what-if: example price)" if self.example_prices else "Decision report"
        return f"What-if protocol: {kind[0].lower()}{kind[1:]}: {self.experiment}" if self.what_if \
            else f"{kind}: {self.experiment}"


def _digest_text(report: Report, code, plain) -> str:
    """The protocol line: the locked digest, or a what-if protocol's digest beside it; code() marks a digest,
    plain() any other text (escaping it for HTML)."""
    catalog = plain(report.catalog)
    if not report.what_if:
        return f"Protocol digest {code(report.protocol_digest[:16])}; catalog {catalog}."
    return (f"Protocol digest {code(report.what_if_digest[:16])}: {plain(report.what_if)}, not the protocol locked on "
            f"the experiment ({code(report.protocol_digest[:16])}); catalog {catalog}.")


def _rejudged_text(report: Report) -> str:
    """The pending passes this report judged first (the same judge as `gpucost rejudge`), '' when none."""
    if not report.rejudged:
        return ""
    return (f"{len(report.rejudged)} pending pass(es) whose reference now exists were judged and recorded on their "
            f"runs before this report: {'; '.join(report.rejudged)}.")


@dataclass
class VariantExclusions:
    """One variant's excluded attempts (k of its n attempts), each as [device, run id, cause, by, when]."""
    variant: str
    attempts: int
    excluded: list = field(default_factory=list)


@dataclass(frozen=True)
class Link:
    """A cell that links to a page (a run's page in the MLflow UI): text shown, full value kept as its title."""
    text: str
    href: str
    title: str = ""


@dataclass
class Table:
    """One table of the report: its id, header, rows of cells (str or Link) and the footnotes its cells point to."""
    ident: str
    head: list[str]
    rows: list[list] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> str:
        """'[n]' for text listed once under the table; identical texts share a number."""
        if text not in self.notes:
            self.notes.append(text)
        return f"[{self.notes.index(text) + 1}]"

    def fold(self, text: str, limit: int = FOLD) -> str:
        """Short text as is; a longer one as its head (before ':', ';' or '(') and a footnote with the whole."""
        text = str(text)
        if len(text) <= limit:
            return text
        head = re.split(r"[:;(]", text, maxsplit=1)[0].strip()
        return f"{head} {self.note(text)}" if head and len(head) <= limit and head != text else self.note(text)

    def advice(self, text: str) -> str:
        """The finding before the first '; ' kept in the cell, the advice after it (the same on every row) a footnote."""
        finding, sep, rest = str(text).partition("; ")
        return f"{finding} {self.note(rest)}" if sep else finding


def run_href(report: Report, run_id: str) -> str:
    """The run's page in the MLflow UI: `<root>/#/experiments/<eid>/runs/<rid>` (or the direct `#/runs/<rid>`)."""
    root = report.ui_root.rstrip("/")
    route = f"#/experiments/{quote(report.experiment_id, safe='')}/runs/" if report.experiment_id else "#/runs/"
    return f"{root}/{route}{quote(str(run_id), safe='')}"


def _run(report: Report, run_id, short: bool = True):
    """A run id as a link to its page (the first 8 characters shown when short), plain text without a UI root."""
    run_id = "" if run_id is None or (not isinstance(run_id, str) and pd.isna(run_id)) else str(run_id)
    if not run_id or not report.ui_root:
        return run_id
    return Link(run_id[:8] if short else run_id, run_href(report, run_id), run_id)


def _cell(value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _empty(table: Table, reason: str) -> str:
    """A missing measurement: 'empty' and the reason as a footnote, never 0."""
    return f"empty {table.note(reason or 'not measured')}"


def _pair(table: Table, values: dict, first: str, second: str, fmt, reason: str) -> str:
    """'useful / padded' medians, or 'empty [n]' with the reason in a footnote."""
    if first not in values or second not in values:
        return _empty(table, reason)
    return f"{fmt(values[first])} / {fmt(values[second])}"


MEMORY_NAMES = {"mem_peak_allocated_bytes": "allocated", "mem_peak_reserved_bytes": "reserved", "mem_peak_rss_bytes": "RSS"}


def _attempt_counts(counts: dict) -> str:
    """'5 accepted' or '4 accepted, 1 failed': only the statuses that occurred."""
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "none"


# The pass count in the per-configuration header is the protocol's (`passes_per_variant`), never a literal.
def _durations_text(report: Report) -> str:
    count = (f"{report.passes_per_variant} raw durations per configuration (passes_per_variant of the protocol)"
             if report.passes_per_variant else "every raw duration of each configuration")
    return f"{count}, median, min, max; no p95, no mean"


SUMMARY_HEAD = ["device", "variant", "raw pass_s", "median", "min", "max", "overlapped", "attempts", "memory peak",
                "macro-F1 (median)", "quality verdicts", "GFLOP/s useful / padded (median)",
                "MFU useful / padded (median)"]
SUMMARY_TEXT = ("Overlapped: durations measured while another pass ran on the same host. Memory: the largest peak "
                "per counter, never added; its counter in the footnote. MFU: of the dense-matmul peak.")


def _summary(report: Report) -> Table:
    table = Table("summary", SUMMARY_HEAD)
    for s in report.summaries:
        c, d = s.configuration, s.configuration.durations
        peaks = "; ".join(f"{v / 2**20:,.0f} MiB {MEMORY_NAMES.get(k, k)}" for k, v in s.memory.items())
        memory = f"{peaks} {table.note(s.memory_counter)}" if peaks and s.memory_counter else (peaks or _empty(table, "no memory peak recorded"))
        verdicts = "; ".join(f"{n} {table.fold(verdict, 16)}" for verdict, n in s.quality_verdicts.items())
        table.rows.append([
            c.device, c.label, " ".join(f"{v:.3f}" for v in d.values), _cell(d.median), _cell(d.minimum), _cell(d.maximum),
            f"{s.overlapped} of {len(d.values)}", _attempt_counts(c.counts), memory, _cell(s.macro_f1), verdicts,
            _pair(table, s.utilisation, "useful_flop_per_s", "padded_flop_per_s", lambda v: f"{v / 1e9:,.1f}", s.mfu_reason),
            _pair(table, s.utilisation, "mfu_useful", "mfu_padded", lambda v: f"{100 * v:.1f} %", s.mfu_reason),
        ])
    return table


ENERGY_HEAD = ["device", "variant", "energy per pass (J, median)", "energy per validated corpus (J)"]
ENERGY_TEXT = ("Energy: the board's (or CPU package's) cumulative counter read just before and just after each "
               "measured pass (docs/pass.md); per validated corpus, the median over accepted passes, each of which "
               "processed one whole corpus. Empty with the reason where no counter exists.")


def _energy(report: Report) -> Table:
    table = Table("energy", ENERGY_HEAD)
    for s in report.summaries:
        c = s.configuration
        per_pass = (f"{s.joules_per_pass:,.1f}" if s.joules_per_pass is not None else _empty(table, s.energy_reason))
        per_corpus = (f"{s.joules_per_validated:,.1f}" if s.joules_per_validated is not None
                      else _empty(table, s.energy_reason))
        if s.joules_per_pass is not None and s.energy_reason:
            per_pass += f" {table.note(s.energy_reason)}"
        table.rows.append([c.device, c.label, per_pass, per_corpus])
    return table


SEPARATION_HEAD = ["series", "faster", "slower", "median difference (s)", "largest spread (s)", "ranges overlap",
                   "permutation p (exact, supporting)", "verdict"]


def _separation(report: Report) -> Table:
    table = Table("separability", SEPARATION_HEAD)
    for name, s in report.separations:
        table.rows.append([name, s.faster, s.slower, _cell(s.median_difference), _cell(s.largest_spread),
                           "" if s.ranges_overlap is None else str(s.ranges_overlap), _cell(s.p_value), table.advice(s.verdict)])
    return table


FORECAST_HEAD = ["device", "variant", "setup (h)", "waiting (h)", "comparisons on the real schedule (h, attempts on the device)",
                 "comparisons summed (h)", "start-up (h)", "deliverables (h, expected, streams)", "forecast window (h)",
                 "range (h): fastest-slowest pass", "forecast end (median / slowest)", "deadline"]


def _forecast(report: Report) -> Table:
    table = Table("forecast", FORECAST_HEAD)
    for a in report.assessments:
        c, f = a.configuration, a.forecast
        if f is None:
            table.rows.append([c.device, c.label] + [""] * 6 + [_empty(table, a.forecast_note), "", "",
                                                                 table.fold(a.deadline_status)])
            continue
        estimated = f", {f.comparisons_estimated} by stage times" if f.comparisons_estimated else ""
        ends = " / ".join(end.isoformat(timespec="minutes") for end in (a.forecast_end, a.forecast_end_high) if end)
        table.rows.append([c.device, c.label, f"{f.setup_h:g}", f"{f.waiting_h:g}", f"{f.comparisons_h:.3f} ({f.comparisons}{estimated})",
                           f"{f.comparisons_sum_h if f.comparisons_sum_h is not None else f.comparisons_h:.3f}",
                           f"{f.startup_h:.3f}", f"{f.deliverables_h:.3f} ({f.deliverables:,}, {f.streams}) {table.note(f.streams_note)}",
                           f"{f.hours:,.3f}", f"{f.low_hours:,.3f}-{f.high_hours:,.3f}", ends, table.fold(a.deadline_status)])
    return table


PLAN_HEAD = ["device", "variant", "feasible", "committed plan (covers the slowest-pass forecast)", "committed",
             "median-pass plan (possible saving)", "next plans", "accepted deliverables", "cost per validated corpus"]


def _committed(table: Table, a: Assessment) -> str:
    return money(a.committed, a.currency) if a.committed is not None else table.fold(a.priced)


def _per_corpus(table: Table, a: Assessment) -> str:
    if a.cost_per_validated is not None:
        return f"{a.cost_per_validated:,.2f} {a.currency}"
    return table.fold("undefined (no accepted deliverable)")


def _saving(a: Assessment) -> str:
    """The median-pass plan when it is cheaper than the committed one, with the difference; else 'the same'."""
    if a.median_plan is None:
        return ""
    if a.saving is None:
        return "the same plan"
    return f"{a.median_plan.describe()} (saves {money(a.saving, a.currency)} if no pass is slower than the median)"


def _plan(report: Report) -> Table:
    table = Table("balance", PLAN_HEAD)
    for a in report.assessments:
        c = a.configuration
        table.rows.append([c.device, c.label, f"{'yes' if a.feasible else 'no'} {table.note(a.feasibility)}",
                           a.plan.describe() if a.plan else f"none {table.note(a.priced)}", _committed(table, a),
                           _saving(a), "\n".join(p.describe() for p in a.plans[1:3]), str(c.accepted_deliverables),
                           _per_corpus(table, a)])
    return table


DECISION_HEAD = ["configuration", "standing", "median pass_s", "forecast window (h)", "deadline", "committed",
                 "cost per validated corpus"]


def _decision(report: Report) -> Table:
    """Every configuration as the decision saw it: chosen (or tied) first, then the timely ones by cost, then the rest."""
    table = Table("decision", DECISION_HEAD)
    choice = report.choice
    ranked = choice.chosen + choice.undecided + choice.others
    ordered = ranked + [a for a in report.assessments if not any(a is r for r in ranked)]
    lowest = choice.chosen[0].committed if choice.chosen else None
    for a in ordered:
        if any(a is r for r in choice.chosen):
            standing = "tied (chosen)" if len(choice.chosen) > 1 else "chosen"
        elif any(a is r for r in choice.undecided):
            standing = table.fold("undecided: does not separate from the others marked so, at another price")
        elif any(a is r for r in choice.others):
            standing = "slower at the same cost" if a.committed == lowest else "costs more"
        elif a.under_sampled:
            standing = a.under_sampled
        elif not a.feasible:
            standing = f"infeasible {table.note(a.feasibility)}"
        elif a.plan is not None and not a.stable:
            standing = f"unstable: re-measure {table.note(a.unstable)}"
        elif a.plan is None:
            standing = table.fold(a.priced)
        elif a.meets_deadline is False:
            standing = "misses the deadline"
        else:
            standing = table.fold(f"no decision: {choice.none}") if choice.none else ""
        f = a.forecast
        table.rows.append([a.configuration.name, standing, _cell(a.configuration.durations.median),
                           f"{f.hours:,.3f}" if f else _empty(table, a.forecast_note), table.fold(a.deadline_status),
                           _committed(table, a), _per_corpus(table, a)])
    return table


OTHER_HEAD = ["other cost", "amount", "basis"]


def _other(report: Report) -> Table:
    return Table("other-costs", OTHER_HEAD, [[cost.label, f"{cost.amount:,.2f} {cost.currency}", cost.basis]
                                             for cost in report.other_costs])


# The attempts-table columns the report shows; attempts.csv keeps them all.
ATTEMPT_COLUMNS = ["pass_index", "round", "position", "variant", "device", "status", "reason", "pass_s", "macro_f1",
                   "quality_verdict", "run_id", "expected_ids", "observed_ids", "ids_match", "corpus_accepted",
                   "completed_entries", "mfu_useful", "mfu_padded", "mfu_reason", "overlapped_with"]
ATTEMPT_HEAD = ["#", "round", "position", "variant", "device", "status", "reason", "pass_s", "macro-F1", "quality", "run"]
CHECK_HEAD = ["#", "run", "ids expected", "ids observed", "ids match", "corpus accepted", "completed entries",
              "MFU useful / padded", "overlapped with"]


def _attempt_tables(report: Report) -> tuple[Table, Table]:
    """The attempts in two narrower tables: outcome, then checks and utilisation; '#' and the run join them."""
    outcome, checks = Table("attempts", ATTEMPT_HEAD), Table("attempt-checks", CHECK_HEAD)
    for row in report.attempts.to_dict("records"):
        number = _cell(row.get("pass_index"))
        run = _run(report, row.get("run_id"))
        outcome.rows.append([number, _cell(row.get("round")), _cell(row.get("position")), _cell(row.get("variant")),
                             _cell(row.get("device")), _cell(row.get("status")), outcome.fold(_cell(row.get("reason"))),
                             _cell(row.get("pass_s")), _cell(row.get("macro_f1")), outcome.fold(_cell(row.get("quality_verdict")), 16),
                             run])
        mfu = ({"mfu_useful": row.get("mfu_useful"), "mfu_padded": row.get("mfu_padded")}
               if pd.notna(row.get("mfu_useful")) and pd.notna(row.get("mfu_padded")) else {})
        overlapped = ", ".join(other[:8] for other in _cell(row.get("overlapped_with")).split(",") if other)
        checks.rows.append([number, run, _cell(row.get("expected_ids")), _cell(row.get("observed_ids")),
                            _cell(row.get("ids_match")), _cell(row.get("corpus_accepted")), _cell(row.get("completed_entries")),
                            _pair(checks, mfu, "mfu_useful", "mfu_padded", lambda v: f"{v:.3f}", _cell(row.get("mfu_reason"))),
                            overlapped])
    return outcome, checks


EXCLUSIONS_TITLE = "Exclusions (PROTOCOL.md §6)"
EXCLUSION_HEAD = ["variant", "device", "run id", "cause", "by", "when (UTC)"]


def _exclusion_text(report: Report) -> tuple[list[str], str]:
    """Per variant 'excluded k of n attempts' (none: one line saying so), and the protocol's rule."""
    counts = ([f"{v.variant}: excluded {len(v.excluded)} of {v.attempts} attempts" for v in report.exclusions]
              if any(v.excluded for v in report.exclusions) else [])
    return counts, f"Exclusion rule of the protocol, the same for every variant: {report.exclusion_rule or 'not declared'}"


def _exclusions(report: Report) -> Table:
    rows = [[v.variant, device, _run(report, run_id, short=False), *rest]
            for v in report.exclusions for device, run_id, *rest in v.excluded]
    return Table("exclusions", EXCLUSION_HEAD, rows)


OTHER_TEXT = ("Declared in the protocol and listed apart: never folded into one configuration's committed cost and "
              "not another's (PROTOCOL.md §10).")
BREAK_EVEN_TEXT = ("Forecast: the volume of expected deliverables at which the cheapest feasible configurations of two "
                   "priced devices change order, from the same forecast and covering plans as above.")
DECISION_TEXT = ("Standing: chosen (or tied: only configurations whose durations do not separate from each other), "
                 "then the other configurations that meet the deadline by committed cost, then those the decision left "
                 "out and why: under-sampled (fewer passes than passes_per_variant), unstable (their own durations "
                 "spread beyond max_spread_ratio), infeasible, unpriced or late. Committed: the plan covering the "
                 "slowest-pass forecast.")


def _overhead_text(report: Report) -> str:
    seconds, count = report.overhead
    if seconds is None:
        return "Harness overhead per pass: empty (no attempt with its run wall time and every timed part)."
    return (f"Harness overhead per pass: {seconds:.2f} s (median over {count} attempts of run wall time minus load, "
            "warm-up, pass, evaluation and export: process start, manifest, logging, reference download); it is "
            "inside the comparisons term of the forecast.")


def _plan_text(report: Report) -> str:
    p = report.plan
    if p is None:
        return "No plan declared in the protocol: no forecast, so no window to cover and nothing priced (no plan: no forecast)."
    start = p["start"].isoformat() if p.get("start") else "not declared"
    return (f"Forecast, not a measurement, and never counted as accepted deliverables: window = {p['setup_hours']:g} h setup "
            f"+ {p['waiting_hours']:g} h declared waiting + every benchmark attempt run on the device on the real schedule "
            f"(the union of their run wall times per host: attempts run side by side on one lot's GPUs count once; "
            f"failed, rejected and excluded attempts included; the plain sum is shown beside it) + (1 + "
            f"{p['planned_restarts']} planned restarts) x (median load + warm-up) + expected deliverables x (median pass + "
            f"evaluation + export), one deliverable after another unless the protocol declares them side by side (the "
            f"assumption is in each row's footnote); the range puts the deliverables at the fastest and slowest observed "
            f"pass. Planned start {start}; deadline {report.deadline}, met only if the slowest-pass forecast ends before "
            f"it. The committed plan is the cheapest way the catalog covers the slowest-pass window (package length x "
            f"consecutive periods x lots, or hours billed), on a tie the shorter: what finishes the work for sure; the "
            f"median-pass plan is shown as the possible saving, and the next two plans beside it.")


MFU_TEXT = ("GFLOP/s and MFU: forward-pass FLOPs counted from the model config and the real token counts of the "
            "batches (matrix multiplies only), divided by pass_s; useful leaves padding out, padded counts what the "
            "padded batches made the device compute. MFU is that rate as a share of the device's dense matrix-multiply "
            "throughput measured by `gpucost doctor --peak` at the pass's precision (docs/pass.md).")


def _links_text(report: Report) -> str:
    return (f"Run ids link to the run's page in the MLflow UI at {report.ui_root} (the tracking server the report read, "
            "or `mlflow ui`'s default address for a database or folder store). Inside MLflow's artifact view this page "
            "sits in a sandboxed frame that may refuse to open a link: open it with your browser's 'Open link in new "
            "tab'. attempts.csv holds every column of every attempt.")


# ---- Markdown ----

def _md_cell(cell) -> str:
    if isinstance(cell, Link):
        text = f"[{cell.title or cell.text}]({cell.href})"
    else:
        text = str(cell)
    return text.replace("|", "\\|").replace("\n", "; ")


def _md_table(table: Table) -> str:
    lines = ["| " + " | ".join(_md_cell(h) for h in table.head) + " |", "|" + " --- |" * len(table.head)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    lines += [""] + [f"- [{n}] {text}" for n, text in enumerate(table.notes, 1)] if table.notes else []
    return "\n".join(lines)


def _exclusions_md(report: Report) -> list[str]:
    counts, rule = _exclusion_text(report)
    table = _exclusions(report)
    parts = [f"## {EXCLUSIONS_TITLE}", ""] + ([f"- {line}" for line in counts] if counts else ["No attempt excluded."])
    return parts + ["", rule, ""] + ([_md_table(table), ""] if table.rows else [])


def _optional_md(report: Report) -> list[str]:
    """Other costs and break-even sections, only when there is something to show."""
    parts = []
    if report.other_costs:
        parts += ["### Other costs", "", OTHER_TEXT, "", _md_table(_other(report)), ""]
    if report.break_evens:
        parts += ["### Break-even volume (forecast)", "", BREAK_EVEN_TEXT, ""] + [f"- {line}" for line in report.break_evens] + [""]
    return parts


def _scope_md(report: Report) -> list[str]:
    """The closing section (scope, reproducibility; PROTOCOL.md §1, §7, §12) and the licences footer."""
    return ([f"## {scope.TITLE}", "", "**Scope.**", ""] + [f"- {line}" for line in scope.covers(report.attempts, report.catalog)]
            + ["", "**Reproducibility.**", ""] + [f"- {line}" for line in scope.reproducible(report.attempts)]
            + ["", "---", "", "**Licences and sources.**", ""] + [f"- {line}" for line in scope.licences()] + [""])


def markdown(report: Report) -> str:
    """The report as Markdown: the decision first, then the figures behind it, then every attempt."""
    outcome, checks = _attempt_tables(report)
    parts = [f"# {report.title}", "", f"**Decision note.** {report.decision}", "", _md_table(_decision(report)), "",
             DECISION_TEXT, ""]
    parts += [f"> **Warning:** {w}" for w in report.warnings]
    parts += ["", f"**Question.** {report.question}", "",
              _digest_text(report, lambda text: f"`{text}`", str), "",
              *([f"**Re-judged first.** {_rejudged_text(report)}", ""] if report.rejudged else []),
              "## Per configuration", "", _durations_text(report).capitalize() + ".", "", _md_table(_summary(report)), "",
              SUMMARY_TEXT, "", _md_table(_energy(report)), "", ENERGY_TEXT, "",
              MFU_TEXT, "", *_exclusions_md(report),
              "## Separability within each series", "", _md_table(_separation(report)), "",
              "## Campaign plan and committed cost", "", _plan_text(report), "", _overhead_text(report), "",
              _md_table(_forecast(report)), "", _md_table(_plan(report)), "", *_optional_md(report),
              f"## Attempts ({len(report.attempts)} rows, one per attempted pass)", "", _links_text(report), "",
              _md_table(outcome), "", _md_table(checks), "", *_scope_md(report)]
    return "\n".join(parts)


# ---- HTML ----

def _numeric(text: str) -> bool:
    """A number-like cell (figures, units, ranges, dates) that must not wrap: every word holds a digit or is short."""
    words = re.sub(r" \[\d+\]", "", text).split()
    return 0 < len(text) <= 24 and text[:1].isdigit() and all(any(ch.isdigit() for ch in w) or len(w) <= 3 for w in words)


def _html_cell(cell, tag: str = "td") -> str:
    e = html.escape
    if isinstance(cell, Link):
        title = f' title="{e(cell.title)}"' if cell.title else ""
        return (f'<{tag} class="n"><a href="{e(cell.href)}" target="_blank" rel="noopener noreferrer"{title}>'
                f"{e(cell.text)}</a></{tag}>")
    text = str(cell)
    numeric = ' class="n"' if tag == "td" and _numeric(text) else ""
    glued = re.sub(r" (\[\d+\])", "\u00a0\\1", text)  # a footnote mark never wraps away from its word
    return f"<{tag}{numeric}>" + "<br>".join(e(line) for line in glued.split("\n")) + f"</{tag}>"


def _html_table(table: Table) -> str:
    e = html.escape
    out = [f'<div class="scroll"><table id="{e(table.ident)}"><thead><tr>'
           + "".join(_html_cell(h, "th") for h in table.head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(_html_cell(c) for c in row) + "</tr>" for row in table.rows]
    out.append("</tbody></table></div>")
    if table.notes:
        out.append(f'<ol class="notes" id="{e(table.ident)}-notes">'
                   + "".join(f"<li>{e(text)}</li>" for text in table.notes) + "</ol>")
    return "".join(out)


def _exclusions_html(report: Report) -> list[str]:
    e = html.escape
    counts, rule = _exclusion_text(report)
    table = _exclusions(report)
    parts = [f"<h2>{e(EXCLUSIONS_TITLE)}</h2>",
             "<ul>" + "".join(f"<li>{e(line)}</li>" for line in counts) + "</ul>" if counts else "<p>No attempt excluded.</p>",
             f"<p>{e(rule)}</p>"]
    return parts + ([_html_table(table)] if table.rows else [])


def _optional_html(report: Report) -> list[str]:
    e = html.escape
    parts = []
    if report.other_costs:
        parts += ["<h3>Other costs</h3>", f"<p>{e(OTHER_TEXT)}</p>", _html_table(_other(report))]
    if report.break_evens:
        parts += ["<h3>Break-even volume (forecast)</h3>", f"<p>{e(BREAK_EVEN_TEXT)}</p>",
                  "<ul>" + "".join(f"<li>{e(line)}</li>" for line in report.break_evens) + "</ul>"]
    return parts


def _scope_html(report: Report) -> list[str]:
    """The closing section (scope, reproducibility; PROTOCOL.md §1, §7, §12) and the licences footer, escaped."""
    e = html.escape

    def items(lines: list[str]) -> str:
        return "<ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>"

    return [f'<h2 id="scope">{e(scope.TITLE)}</h2>', "<h3>Scope</h3>", items(scope.covers(report.attempts, report.catalog)),
            "<h3>Reproducibility</h3>", items(scope.reproducible(report.attempts)),
            f'<footer id="licences"><hr><p><b>Licences and sources.</b></p>{items(scope.licences())}</footer>']


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:1em 0 .3em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}td.n{white-space:nowrap}.warning{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}
.decision{background:#e8f4ea;padding:.8em 1em;border-left:4px solid #2ca02c;font-size:15px}img{max-width:100%}
.scroll{overflow-x:auto;max-width:100%}figure{display:inline-block;margin:.5em 1em .5em 0}
ol.notes{font-size:12px;color:#444;margin:.2em 0 1em;padding-left:2.2em}ol.notes li::marker{content:"[" counter(list-item) "] "}"""


def page(report: Report) -> str:
    """A self-contained HTML page (inline style, figures as data URIs, no script); every string from runs is escaped."""
    e = html.escape
    outcome, checks = _attempt_tables(report)
    figures = "".join(f'<figure><img alt="{e(name)}" src="{uri}"><figcaption>{e(name)}</figcaption></figure>'
                      for name, uri in report.figures.items())
    body = [f"<h1>{e(report.title)}</h1>", f'<p class="decision"><b>Decision note.</b> {e(report.decision)}</p>',
            _html_table(_decision(report)), f"<p>{e(DECISION_TEXT)}</p>"]
    body += [f'<p class="warning">Warning: {e(w)}</p>' for w in report.warnings]
    body += [f"<p><b>Question.</b> {e(report.question)}</p>",
             f"<p>{_digest_text(report, lambda text: f'<code>{e(text)}</code>', e)}</p>",
             *([f"<p><b>Re-judged first.</b> {e(_rejudged_text(report))}</p>"] if report.rejudged else []),
             f"<h2>Per configuration</h2><p>{e(_durations_text(report).capitalize())}.</p>",
             _html_table(_summary(report)), f"<p>{e(SUMMARY_TEXT)}</p>", _html_table(_energy(report)),
             f"<p>{e(ENERGY_TEXT)}</p>", f"<p>{e(MFU_TEXT)}</p>", *_exclusions_html(report),
             "<h2>Separability within each series</h2>", _html_table(_separation(report)),
             "<h2>Campaign plan and committed cost</h2>", f"<p>{e(_plan_text(report))}</p>", f"<p>{e(_overhead_text(report))}</p>",
             _html_table(_forecast(report)), _html_table(_plan(report)), *_optional_html(report),
             "<h2>Figures</h2>", figures,
             f"<h2>Attempts ({len(report.attempts)} rows, one per attempted pass)</h2>", f"<p>{e(_links_text(report))}</p>",
             "<h3>Outcome</h3>", _html_table(outcome), "<h3>Checks, utilisation and overlaps</h3>", _html_table(checks),
             *_scope_html(report)]
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpucost {e(report.title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
