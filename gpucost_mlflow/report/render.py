"""The decision report: one model of the content, written as Markdown and as a self-contained HTML page."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd

from gpucost_mlflow.core.decision import Assessment
from gpucost_mlflow.core.stats import Separation
from gpucost_mlflow.report.tables import Summary, money_or_reason

ATTEMPT_COLUMNS = ["pass_index", "round", "position", "variant", "device", "status", "pass_s", "mfu_useful", "mfu_padded",
                   "quality_verdict", "macro_f1", "expected_ids", "observed_ids", "ids_match", "corpus_accepted",
                   "completed_entries", "reason", "overlapped_with", "mfu_reason", "run_id"]


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
    figures: dict = field(default_factory=dict)
    break_evens: list[str] = field(default_factory=list)
    overhead: tuple = (None, 0)  # median harness overhead per attempt (s), attempts counted
    other_costs: tuple = ()
    example_prices: bool = False
    exclusions: list = field(default_factory=list)  # VariantExclusions, one per variant (PROTOCOL.md §6)
    exclusion_rule: str = ""

    @property
    def title(self) -> str:
        """The page title; a what-if catalog of example prices says so in it."""
        kind = "Decision report (what-if: example price)" if self.example_prices else "Decision report"
        return f"{kind}: {self.experiment}"


@dataclass
class VariantExclusions:
    """One variant's excluded attempts (k of its n attempts), each as [device, run id, cause, by, when]."""
    variant: str
    attempts: int
    excluded: list = field(default_factory=list)


EXCLUSIONS_TITLE = "Exclusions (PROTOCOL.md §6)"
EXCLUSION_HEAD = ["variant", "device", "run id", "cause", "by", "when (UTC)"]


def _exclusion_text(report: Report) -> tuple[list[str], str]:
    """Per variant 'excluded k of n attempts' (none: one line saying so), and the protocol's rule."""
    counts = ([f"{v.variant}: excluded {len(v.excluded)} of {v.attempts} attempts" for v in report.exclusions]
              if any(v.excluded for v in report.exclusions) else [])
    return counts, f"Exclusion rule of the protocol, the same for every variant: {report.exclusion_rule or 'not declared'}"


def _exclusions_md(report: Report) -> list[str]:
    counts, rule = _exclusion_text(report)
    rows = [[v.variant, *row] for v in report.exclusions for row in v.excluded]
    parts = [f"## {EXCLUSIONS_TITLE}", ""] + ([f"- {line}" for line in counts] if counts else ["No attempt excluded."])
    return parts + ["", rule, ""] + ([_md_table(EXCLUSION_HEAD, rows), ""] if rows else [])


def _exclusions_html(report: Report) -> list[str]:
    e = html.escape
    counts, rule = _exclusion_text(report)
    rows = [[v.variant, *row] for v in report.exclusions for row in v.excluded]
    parts = [f"<h2>{e(EXCLUSIONS_TITLE)}</h2>",
             "<ul>" + "".join(f"<li>{e(line)}</li>" for line in counts) + "</ul>" if counts else "<p>No attempt excluded.</p>",
             f"<p>{e(rule)}</p>"]
    return parts + ([_html_table(EXCLUSION_HEAD, rows, "exclusions")] if rows else [])


def _cell(value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _summary_rows(report: Report) -> list[list[str]]:
    rows = []
    for s in report.summaries:
        c = s.configuration
        d = c.durations
        counts = c.counts
        rows.append([
            c.device, c.label, " ".join(f"{v:.3f}" for v in d.values), _cell(d.median), _cell(d.minimum), _cell(d.maximum),
            f"{s.overlapped} of {len(d.values)}",
            str(counts["accepted"]), str(counts["rejected"]), str(counts["failed"]), str(counts["excluded"]), str(counts["pending"]),
            "; ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in s.memory.items()), s.memory_counter,
            _cell(s.macro_f1), "; ".join(f"{k}: {v}" for k, v in s.quality_verdicts.items()),
            _pair(s.utilisation, "useful_flop_per_s", "padded_flop_per_s", lambda v: f"{v / 1e9:,.1f}", s.mfu_reason),
            _pair(s.utilisation, "mfu_useful", "mfu_padded", lambda v: f"{100 * v:.1f} %", s.mfu_reason),
        ])
    return rows


def _pair(values: dict, first: str, second: str, fmt, reason: str) -> str:
    """'useful / padded' medians, or 'empty: reason' (a missing measurement is never shown as 0)."""
    if first not in values or second not in values:
        return f"empty: {reason or 'not measured'}"
    return f"{fmt(values[first])} / {fmt(values[second])}"


SUMMARY_HEAD = ["device", "variant", "raw pass_s", "median", "min", "max", "overlapped (another pass on the host)", "accepted", "rejected", "failed",
                "excluded", "pending", "memory peaks", "memory counter", "macro-F1 (median)", "quality verdicts",
                "GFLOP/s useful / padded (median)", "MFU useful / padded (median, of the dense-matmul peak)"]
SEPARATION_HEAD = ["series", "faster", "slower", "median difference (s)", "largest spread (s)", "ranges overlap",
                   "permutation p (exact, supporting)", "verdict"]
FORECAST_HEAD = ["device", "variant", "setup (h)", "waiting (h)", "comparisons (h, attempts on the device)",
                 "start-up (h)", "deliverables (h, expected)", "forecast window (h)", "range (h): fastest-slowest pass",
                 "forecast end", "deadline"]
PLAN_HEAD = ["device", "variant", "feasible", "why", "cheapest covering plan", "committed", "next plans",
             "accepted deliverables", "cost per validated corpus"]
OTHER_HEAD = ["other cost", "amount", "basis"]


def _separation_rows(report: Report) -> list[list[str]]:
    return [[name, s.faster, s.slower, _cell(s.median_difference), _cell(s.largest_spread),
             "" if s.ranges_overlap is None else str(s.ranges_overlap), _cell(s.p_value), s.verdict]
            for name, s in report.separations]


def _forecast_rows(report: Report) -> list[list[str]]:
    rows = []
    for a in report.assessments:
        c, f = a.configuration, a.forecast
        if f is None:
            rows.append([c.device, c.label] + [""] * 5 + [f"empty: {a.forecast_note}", "", "", a.deadline_status])
            continue
        rows.append([c.device, c.label, f"{f.setup_h:g}", f"{f.waiting_h:g}",
                     f"{f.comparisons_h:.3f} ({f.comparisons}{f', {f.comparisons_estimated} by stage times' if f.comparisons_estimated else ''})",
                     f"{f.startup_h:.3f}", f"{f.deliverables_h:.3f} ({f.deliverables:,})", f"{f.hours:,.3f}",
                     f"{f.low_hours:,.3f}-{f.high_hours:,.3f}",
                     a.forecast_end.isoformat(timespec="minutes") if a.forecast_end else "", a.deadline_status])
    return rows


def _plan_rows(report: Report) -> list[list[str]]:
    rows = []
    for a in report.assessments:
        c = a.configuration
        per = (f"{a.cost_per_validated:,.2f} {a.currency}" if a.cost_per_validated is not None
               else "undefined (no accepted deliverable)")
        rows.append([c.device, c.label, str(a.feasible), a.feasibility, a.priced if a.plan else "",
                     money_or_reason(a), " | ".join(p.describe() for p in a.plans[1:3]), str(c.accepted_deliverables), per])
    return rows


def _other_rows(report: Report) -> list[list[str]]:
    return [[cost.label, f"{cost.amount:,.2f} {cost.currency}", cost.basis] for cost in report.other_costs]


OTHER_TEXT = ("Declared in the protocol and listed apart: never folded into one configuration's committed cost and "
              "not another's (PROTOCOL.md §10).")
BREAK_EVEN_TEXT = ("Forecast: the volume of expected deliverables at which the cheapest feasible configurations of two "
                   "priced devices change order, from the same forecast and covering plans as above.")


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
            f"+ {p['waiting_hours']:g} h declared waiting + every benchmark attempt run on the device (its run wall time: "
            f"start, load, warm-up, pass, evaluation, export; failed, rejected and excluded attempts included) + (1 + "
            f"{p['planned_restarts']} planned restarts) x (median load + warm-up) + expected deliverables x (median pass + "
            f"evaluation + export), one deliverable after another; the range puts the deliverables at the fastest and "
            f"slowest observed pass. Planned start {start}; deadline {report.deadline}. The plan is the cheapest way the "
            f"catalog covers the median window (package length x consecutive periods x lots, or hours billed), on a tie "
            f"the shorter; the next two are shown.")


MFU_TEXT = ("GFLOP/s and MFU: forward-pass FLOPs counted from the model config and the real token counts of the "
            "batches (matrix multiplies only), divided by pass_s; useful leaves padding out, padded counts what the "
            "padded batches made the device compute. MFU is that rate as a share of the device's dense matrix-multiply "
            "throughput measured by `gpucost doctor --peak` at the pass's precision (docs/pass.md).")


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    esc = lambda text: str(text).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(report: Report) -> str:
    attempts = report.attempts[ATTEMPT_COLUMNS]
    parts = [f"# {report.title}", ""]
    parts += [f"> **Warning:** {w}" for w in report.warnings]
    parts += ["", f"**Question.** {report.question}", "", f"**Decision note.** {report.decision}", "",
              f"Protocol digest `{report.protocol_digest[:16]}`; catalog {report.catalog}.", "",
              "## Per configuration (five raw durations, median, min, max; no p95, no mean)", "",
              _md_table(SUMMARY_HEAD, _summary_rows(report)), "", MFU_TEXT, "", *_exclusions_md(report),
              "## Separability within each series", "", _md_table(SEPARATION_HEAD, _separation_rows(report)), "",
              "## Campaign plan and committed cost", "", _plan_text(report), "", _overhead_text(report), "", _md_table(FORECAST_HEAD, _forecast_rows(report)), "",
              _md_table(PLAN_HEAD, _plan_rows(report)), "", *_optional_md(report),
              f"## Attempts ({len(attempts)} rows, one per attempted pass)", "",
              _md_table(list(attempts.columns), [[_cell(v) for v in row] for row in attempts.itertuples(index=False)]), ""]
    return "\n".join(parts)


def _optional_md(report: Report) -> list[str]:
    """Other costs and break-even sections, only when there is something to show."""
    parts = []
    if report.other_costs:
        parts += ["### Other costs", "", OTHER_TEXT, "", _md_table(OTHER_HEAD, _other_rows(report)), ""]
    if report.break_evens:
        parts += ["### Break-even volume (forecast)", "", BREAK_EVEN_TEXT, ""] + [f"- {line}" for line in report.break_evens] + [""]
    return parts


def _optional_html(report: Report) -> list[str]:
    e = html.escape
    parts = []
    if report.other_costs:
        parts += ["<h3>Other costs</h3>", f"<p>{e(OTHER_TEXT)}</p>", _html_table(OTHER_HEAD, _other_rows(report), "other-costs")]
    if report.break_evens:
        parts += ["<h3>Break-even volume (forecast)</h3>", f"<p>{e(BREAK_EVEN_TEXT)}</p>",
                  "<ul>" + "".join(f"<li>{e(line)}</li>" for line in report.break_evens) + "</ul>"]
    return parts


def _html_table(head: list[str], rows: list[list[str]], ident: str = "") -> str:
    e = html.escape
    out = [f'<div class="scroll"><table{f" id={chr(34)}{ident}{chr(34)}" if ident else ""}><thead><tr>'
           + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows]
    return "".join(out) + "</tbody></table></div>"


STYLE = """body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}.warning{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}
.decision{background:#e8f4ea;padding:.8em 1em;border-left:4px solid #2ca02c;font-size:15px}img{max-width:100%}
.scroll{overflow-x:auto;max-width:100%}figure{display:inline-block;margin:.5em 1em .5em 0}"""


def page(report: Report) -> str:
    """A self-contained HTML page (inline style, figures as data URIs); every string from runs is escaped."""
    e = html.escape
    attempts = report.attempts[ATTEMPT_COLUMNS]
    figures = "".join(f'<figure><img alt="{e(name)}" src="{uri}"><figcaption>{e(name)}</figcaption></figure>'
                      for name, uri in report.figures.items())
    body = [f"<h1>{e(report.title)}</h1>"]
    body += [f'<p class="warning">Warning: {e(w)}</p>' for w in report.warnings]
    body += [f"<p><b>Question.</b> {e(report.question)}</p>",
             f'<p class="decision"><b>Decision note.</b> {e(report.decision)}</p>',
             f"<p>Protocol digest <code>{e(report.protocol_digest[:16])}</code>; catalog {e(report.catalog)}.</p>",
             "<h2>Per configuration</h2><p>Five raw durations, median, minimum, maximum; no p95, no mean.</p>",
             _html_table(SUMMARY_HEAD, _summary_rows(report), "summary"), f"<p>{e(MFU_TEXT)}</p>", *_exclusions_html(report),
             "<h2>Separability within each series</h2>", _html_table(SEPARATION_HEAD, _separation_rows(report), "separability"),
             "<h2>Campaign plan and committed cost</h2>", f"<p>{e(_plan_text(report))}</p>", f"<p>{e(_overhead_text(report))}</p>",
             _html_table(FORECAST_HEAD, _forecast_rows(report), "forecast"),
             _html_table(PLAN_HEAD, _plan_rows(report), "balance"), *_optional_html(report),
             "<h2>Figures</h2>", figures,
             f"<h2>Attempts ({len(attempts)} rows, one per attempted pass)</h2>",
             _html_table(list(attempts.columns), [[_cell(v) for v in row] for row in attempts.itertuples(index=False)], "attempts")]
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpucost {e(report.title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
