"""The sections of the decision report as content: every table built once (per configuration, energy,
separability, forecast, plan, decision, other costs; the attempts and exclusions in attempt_sections.py) and the
texts around them, which render.py writes as Markdown and as HTML."""

from __future__ import annotations

from gpucost_mlflow.core.inputs.plan_start import like
from gpucost_mlflow.core.names import (
    MFU_PADDED,
    MFU_USEFUL,
    PADDED_FLOP_PER_S,
    STEADY_LAP,
    USEFUL_FLOP_PER_S,
)
from gpucost_mlflow.report import cost_cells, short, standing
from gpucost_mlflow.report.cells import Table, cell, empty, lift, pair
from gpucost_mlflow.report.model import Report


def digest_text(report: Report, code, plain) -> str:
    """The protocol line: the locked digest, or a what-if protocol's digest beside it; code() marks a digest,
    plain() any other text (escaping it for HTML)."""
    catalog = plain(report.catalog)
    if not report.what_if:
        read = f" ({plain(report.protocol_file)})" if report.protocol_file else ""
        return f"Protocol digest {code(report.protocol_digest[:16])}{read}; catalog {catalog}."
    return (f"Protocol digest {code(report.what_if_digest[:16])}: {plain(report.what_if)}, not the protocol locked on "
            f"the experiment ({code(report.protocol_digest[:16])}); catalog {catalog}.")


def rejudged_text(report: Report) -> str:
    """The pending passes this report judged first (the same judge as `gpucost rejudge`), '' when none."""
    if not report.rejudged:
        return ""
    return (f"{len(report.rejudged)} pending pass(es) whose reference now exists were judged and recorded on their "
            f"runs before this report: {'; '.join(report.rejudged)}.")


MEMORY_NAMES = {"mem_peak_allocated_bytes": "allocated", "mem_peak_reserved_bytes": "reserved",
                "mem_peak_rss_bytes": "RSS"}


def _attempt_counts(counts: dict) -> str:
    """'5 accepted' or '4 accepted, 1 failed': only the statuses that occurred."""
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "none"


def durations_text(report: Report) -> str:
    """The per-configuration header: the protocol's pass count (`passes_per_variant`), never a literal."""
    count = (f"{report.passes_per_variant} raw {STEADY_LAP}s per configuration (passes_per_variant of the protocol)"
             if report.passes_per_variant else f"every raw {STEADY_LAP} of each configuration")
    return f"{count} (each the median of a pass's laps after its first), median, min, max; no p95, no mean"


SUMMARY_HEAD = ["device", "variant", f"raw {STEADY_LAP}s (s)", "median", "min", "max", "overlapped", "attempts",
                "memory peak", "macro-F1 (median)", "quality verdicts",
                "against the reference: agreement, answers changed",
                "GFLOP/s useful / padded (median)", "MFU useful / padded (median)"]
SUMMARY_TEXT = ("Overlapped: durations measured while another pass ran on the same host; contended: while other "
                "processes used more of the machine's CPU than the protocol's max_other_cpu_share (each such pass "
                "may be excluded with `gpucost exclude RUN_ID --reason contended`, its recorded figures as the note: "
                "the attempts table's contended column). Memory: the largest peak per counter, never added; its "
                "counter in the footnote. MFU: of the dense-matmul peak. Too short to time reliably: a measured pass "
                "under 1 s, where clock noise and boost behaviour weigh more than the work (the protocol's "
                "min_measured_s repeats the corpus inside the clock). Throttled: the board reported a power or thermal "
                "slowdown at the start or end of the measured pass. Busy: the mean utilisation of the pass's device "
                "while measured (the pass's own share of the CPU, or the GPU's); starved: under the protocol's "
                "min_utilisation. Against the reference: the labels it agrees on, with the exact interval the bar is "
                "judged on, and on gold labels the inputs right in the reference and wrong here (lost) and the reverse "
                "(gained), with the exact McNemar p-value (docs/protocol.md): correct answers lost while the macro-F1 "
                "holds show.")


def flags_text(s, counted: int) -> str:
    """'; contended 1; throttled 2 of 5; starved 1 of 5: 23 % mean GPU; next batch size worth trying: 16;
    busy GPU 23 %': what flags a configuration's durations carry, and how busy its device was on average."""
    parts = [f"contended {s.contended}" if s.contended else "",
             f"throttled {s.throttled} of {counted}" if s.throttled else "",
             f"too short to time reliably {s.too_short}" if s.too_short else ""]
    if s.starved:
        kind, value = next(((k, v) for k, v in sorted(s.busy.items()) if k.startswith("gpu")),
                           next(iter(s.busy.items()), ("", None)))
        shown = f": {100 * value:.0f} % mean {'GPU' if kind.startswith('gpu') else 'CPU'}" if value is not None else ""
        parts += [f"starved {s.starved} of {counted}{shown}", s.next_batch]
    busy = "/".join(f"{'GPU' if k.startswith('gpu') else 'CPU'} {100 * v:.0f} %" for k, v in sorted(s.busy.items(),
                                                                                                  reverse=True))
    return "".join(f"; {p}" for p in parts if p) + (f"; busy {busy}" if busy else "")


def summary_table(report: Report) -> Table:
    """Per configuration: raw durations, attempts, memory peak, quality verdicts and utilisation."""
    table = Table("summary", SUMMARY_HEAD)
    for s in report.summaries:
        c, d = s.configuration, s.configuration.durations
        peaks = "; ".join(f"{v / 2**20:,.0f} MiB {MEMORY_NAMES.get(k, k)}" for k, v in s.memory.items())
        memory = (f"{peaks} {table.note(s.memory_counter)}" if peaks and s.memory_counter
                  else (peaks or empty(table, "no memory peak recorded")))
        verdicts = "; ".join(f"{n} {table.fold(verdict, 16)}" for verdict, n in s.quality_verdicts.items())
        table.rows.append([
            c.device, c.label, " ".join(f"{v:.3f}" for v in d.values), cell(d.median), cell(d.minimum), cell(d.maximum),
            f"{s.overlapped} of {len(d.values)}" + flags_text(s, len(d.values)),
            _attempt_counts(c.counts), memory, cell(s.macro_f1), verdicts,
            s.against_reference or empty(table, "not compared: no accepted pass judged against the reference"),
            pair(table, s.utilisation, USEFUL_FLOP_PER_S, PADDED_FLOP_PER_S, lambda v: f"{v / 1e9:,.1f}", s.mfu_reason),
            pair(table, s.utilisation, MFU_USEFUL, MFU_PADDED, lambda v: f"{100 * v:.1f} %", s.mfu_reason),
        ])
    return table


ENERGY_HEAD = ["device", "variant", "energy per pass (J, median)", "net of idle power (J, median)",
               "energy per corpus (J, accepted benchmark passes)"]
ENERGY_TEXT = ("Energy: the board's (or CPU package's) cumulative counter read just before and just after each "
               "measured pass (docs/pass.md); per corpus, the median over accepted benchmark passes, each of which "
               "processed one whole comparison corpus (no deliverable corpus is counted here until one is accepted). "
               "Net of idle power: less the board's idle power (measured during the protocol's cooldown_s) times "
               "pass_s. Empty with the reason where no counter exists.")


def energy_table(report: Report) -> Table:
    """Energy per pass and per validated corpus of each configuration, empty with the reason where not measured."""
    table = Table("energy", ENERGY_HEAD, keys=2)
    for s in report.summaries:
        c = s.configuration
        per_pass = (f"{s.joules_per_pass:,.1f}" if s.joules_per_pass is not None else empty(table, s.energy_reason))
        per_corpus = (f"{s.joules_per_validated:,.1f}" if s.joules_per_validated is not None
                      else empty(table, s.energy_reason))
        if s.joules_per_pass is not None and s.energy_reason:
            per_pass += f" {table.note(s.energy_reason)}"
        net = (f"{s.joules_net_per_pass:,.1f}" if s.joules_net_per_pass is not None else empty(table, s.net_reason))
        table.rows.append([c.device, c.label, per_pass, net, per_corpus])
    return table


SEPARATION_HEAD = ["series", "faster", "slower", "median difference (s)", "interval of the difference (s)",
                   "largest spread (s)", "ranges overlap", "permutation p (exact, supporting)", "verdict"]


def separation_table(report: Report) -> Table:
    """Within each series, whether the durations of its faster and slower configurations separate."""
    table = Table("separability", SEPARATION_HEAD)
    for name, s in report.separations:
        interval = (f"{s.interval[0]:.3f} to {s.interval[1]:.3f} ({s.level})" if s.interval
                    else "" if s.median_difference is None else "too few passes")
        table.rows.append([name, s.faster, s.slower, cell(s.median_difference), interval, cell(s.largest_spread),
                           "" if s.ranges_overlap is None else str(s.ranges_overlap), cell(s.p_value),
                           table.advice(s.verdict)])
    return table


FORECAST_HEAD = ["device", "variant", "setup (h)", "waiting (h)",
                 "comparisons on the real schedule (h, attempts on the device)",
                 "comparisons summed (h)", "start-up (h)", "deliverables (h, expected, streams)", "forecast window (h)",
                 "range (h): fastest-slowest pass", "forecast end (median / slowest)", "deadline"]


def forecast_table(report: Report) -> Table:
    """The forecast window of each configuration term by term, its range, its end and the deadline."""
    table = Table("forecast", FORECAST_HEAD)
    for a in report.assessments:
        c, f = a.configuration, a.forecast
        if f is None:
            table.rows.append([c.device, c.label] + [""] * 6 + [empty(table, a.forecast_note), "", "",
                                                                 table.fold(a.deadline_status)])
            continue
        estimated = f", {f.comparisons_estimated} by stage times" if f.comparisons_estimated else ""
        ends = " / ".join(end.isoformat(timespec="minutes") for end in (a.forecast_end, a.forecast_end_high) if end)
        table.rows.append([c.device, c.label, f"{f.setup_h:g}", f"{f.waiting_h:g}",
                           f"{f.comparisons_h:.3f} ({f.comparisons}{estimated})",
                           f"{f.comparisons_sum_h if f.comparisons_sum_h is not None else f.comparisons_h:.3f}",
                           f.startup_said(table.note),
                           f"{f.deliverables_h:.3f} ({f.deliverables:,}, {f.streams}) {table.note(f.streams_note)}",
                           f"{f.hours:,.3f}", f"{f.low_hours:,.3f}-{f.high_hours:,.3f}", ends,
                           table.fold(a.deadline_status)])
    return table


PLAN_HEAD = ["device", "variant", "feasible", "committed plan (covers the slowest-pass forecast)", "committed",
             "median-pass plan (possible saving)", "spare capacity (slowest pass)", "next plans",
             "accepted deliverables", "cost per validated corpus"]


def plan_table(report: Report) -> Table:
    """Feasibility, the committed and median-pass plans and the cost per validated corpus of each configuration; none
    priced for a configuration that cannot be committed to (the decision's `shown_of`)."""
    table = Table("balance", PLAN_HEAD)
    for a in (report.decided.shown_of(a) for a in report.assessments):
        c = a.configuration
        table.rows.append([c.device, c.label, f"{'yes' if a.feasible else 'no'} {table.note(a.feasibility)}",
                           a.plan.describe() if a.plan else f"none {table.note(a.priced)}",
                           cost_cells.committed(table, a), cost_cells.saving(a), cost_cells.capacity(a),
                           "\n".join([p.describe() for p in a.plans[1:3]] + a.refused), str(c.accepted_deliverables),
                           cost_cells.per_corpus(table, a)])
    return table


DECISION_HEAD = ["configuration", "standing", f"median {STEADY_LAP} (s)", "forecast window (h)", "deadline",
                 "committed", "planning budget (forecast)", "cost per validated corpus"]


def decision_table(report: Report) -> Table:
    """Every configuration as the decision saw it, by committed cost (the ones without a committed price last), its
    standing in report/standing.py's words with why it is out as a footnote; no price for one that cannot be
    committed to, its reason instead (the decision's `shown_of`)."""
    table = Table("decision", DECISION_HEAD)
    choice = report.choice
    rank = {id(a): i for i, a in enumerate(choice.chosen + choice.undecided + choice.others)}

    def order(a) -> tuple:
        committed = report.decided.shown_of(a).committed
        return (committed is None, committed or 0, rank.get(id(a), len(rank)))

    for a in sorted(report.assessments, key=order):
        word = standing.role(a, choice)
        why = {standing.UNDECIDED: "does not separate from the others marked so, at another price",
               standing.INFEASIBLE: a.feasibility,
               standing.NOT_SHOWN: a.feasibility.removeprefix(f"{standing.NOT_SHOWN} "),
               standing.NOT_PRICED: a.priced,
               standing.LEFT_OUT: f"no decision: {choice.none}"}.get(word, "")
        f = a.forecast
        said = (a.under_sampled if word == standing.UNDER_SAMPLED else a.feasibility if word == standing.RACED else
                f"{word}: re-measure {table.note(a.unstable)}" if word == standing.UNSTABLE else
                f"{word} {table.note(why)}" if why else word)
        table.rows.append([a.configuration.name, said,
                           cell(a.configuration.durations.median),
                           f"{f.hours:,.3f}" if f else empty(table, a.forecast_note), table.fold(a.deadline_status),
                           *(cost(table, report.decided.shown_of(a))
                             for cost in (cost_cells.committed, cost_cells.per_inputs, cost_cells.per_corpus))])
    return table


def first_table(report: Report) -> tuple[Table, str]:
    """The decision table as the page opens with it: short names (report/short.py), and the columns whose value is
    the same in every row said once in the sentence above it, with the shared device and the abbreviations."""
    names = short.names([a.configuration for a in report.assessments])
    table = decision_table(report)
    table.rows = [[names.short.get(row[0], row[0]), *row[1:]] for row in table.rows]
    table, same = lift(table)
    said = "; ".join(f"{head}: {value}" for head, value in same)
    sentence = " ".join(part for part in (names.legend(), f"The same in every row: {said}." if said else "") if part)
    return table, sentence


OTHER_HEAD = ["other cost", "amount", "basis"]


def other_table(report: Report) -> Table:
    """The protocol's other costs, listed apart from every configuration's committed cost."""
    return Table("other-costs", OTHER_HEAD, [[cost.label, f"{cost.amount:,.2f} {cost.currency}", cost.basis]
                                             for cost in report.other_costs])


OTHER_TEXT = ("Declared in the protocol and listed apart: never folded into one configuration's committed cost and "
              "not another's (PROTOCOL.md §10).")
BREAK_EVEN_TEXT = ("Forecast: the volume of expected deliverables at which the cheapest feasible configurations of two "
                   "priced devices change order, from the same forecast and covering plans as above.")
DECISION_TEXT = ("Standing: chosen (or tied: only configurations whose durations do not separate from each other), "
                 "then the other configurations that meet the deadline by committed cost, then those the decision left "
                 "out and why: under-sampled (fewer passes than passes_per_variant), unstable (their own durations "
                 "spread beyond max_spread_ratio), infeasible, unpriced or late. Committed: the plan covering the "
                 "slowest-pass forecast.")


def overhead_text(report: Report) -> str:
    """The harness overhead per pass, as the campaigns recorded it (one definition), or why it is empty."""
    seconds, count, campaigns = report.overhead
    if seconds is None:
        return ("Harness overhead per pass: empty (no campaign recorded one: passes outside a campaign have no gaps "
                "to count).")
    return (f"Harness overhead per pass: {seconds:.2f} s (each campaign's own figure, `harness_overhead_s_per_pass`, "
            f"weighted by its attempts: {count} attempts in {campaigns} campaign(s); its wall time minus every pass's "
            "load, warm-up, measured clock, evaluation, export and cooldown, per pass: process start, manifest, "
            "logging, reference download and the gaps between passes); it is inside the comparisons term of the "
            "forecast.")


def plan_text(report: Report) -> str:
    """What the forecast window adds up and how the committed plan covers it, or why nothing is priced."""
    p = report.plan
    if p is None:
        return ("No plan declared in the protocol: no forecast, so no window to cover and nothing priced "
                "(no plan: no forecast).")
    start = p.start.isoformat() if p.start else "not declared"
    if report.start_at_report:
        start += (" (plan.start: at_report: the moment this report was read; the deadline is the declared hours "
                  "after it)")
    elif p.start and report.read_at and p.start < like(report.read_at, p.start):
        start += (f" (past: this report was read at {report.read_at.isoformat()}; the window still runs from the "
                  "declared start, as pre-registered, so the deadline is checked against the plan; the card also "
                  "gives the end and the volume that fits from now)")
    return (f"Forecast, not a measurement, and never counted as accepted deliverables: window = {p.setup_hours:g} h "
            f"setup + {p.waiting_hours:g} h declared waiting + every benchmark attempt run on the device on the "
            "real schedule (the union of their run wall times per host: attempts run side by side on one lot's GPUs "
            "count once; failed, rejected and excluded attempts included; the plain sum is shown beside it) + "
            f"(children + {p.planned_restarts} planned restarts) x (median load + warm-up), one child per "
            "deliverables.per_child corpora (all when not declared; lanes: one per corpus, as `gpucost deliver` runs "
            "them) + a deliverables audit per corpus under deliverables.audit (the reference variant's child) + "
            "expected deliverables x (median pass + evaluation + export), one deliverable after another unless the "
            "protocol declares them side by side (the assumption is in each row's footnote); the range puts the "
            f"deliverables at the fastest and slowest observed pass. Planned start {start}; deadline "
            f"{report.deadline}, met only if the slowest-pass forecast ends before it. The committed plan is the "
            "cheapest way the catalog covers the slowest-pass window (package length x consecutive periods x lots, or "
            "hours billed), on a tie the shorter: what finishes the work for sure; the median-pass plan is shown as "
            "the possible saving, and the next two plans beside it.")


MFU_TEXT = ("GFLOP/s and MFU: forward-pass FLOPs counted from the model config and the real token counts of the "
            "batches (matrix multiplies only), divided by pass_s; useful leaves padding out, padded counts what the "
            "padded batches made the device compute. MFU is that rate as a share of the device's dense matrix-multiply "
            "throughput measured by `gpucost doctor --peak` at the pass's precision (docs/pass.md).")


def links_text(report: Report) -> str:
    """Where the run links open, and how to follow one from inside MLflow's artifact view."""
    return (f"Run ids link to the run's page in the MLflow UI at {report.ui_root} (the tracking server the report "
            "read, or `mlflow ui`'s default address for a database or folder store). Inside MLflow's artifact view "
            "this page sits in a sandboxed frame that may refuse to open a link: open it with your browser's 'Open "
            "link in new tab'. attempts.csv holds every column of every attempt.")
