"""How gpucost's runs and experiment read in the MLflow UI: unique readable run names, markdown descriptions
(`mlflow.note.content`) and short tags, composed from plain data (tags, metrics, the protocol, the decision).

Nothing here touches the store: the launcher, the campaign, re-judging, exclusions, overlap flags and the
report call these functions and write what they return, so a run reads the same whoever wrote it last.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.overlap import describe as describe_overlap
from gpucost_mlflow.core.names import FIRST_LAP_S, MACRO_F1, PASS_S, REPETITIONS, STEADY_LAP, STEADY_LAP_S
from gpucost_mlflow.tracking import exclusion_record, limits, schema, ui

SEP = " · "
SHORT = 100  # a short tag value: short enough for the UI's tag list; the description holds the whole reason
NAME = 200
NOTE = limits.TAG_VALUE  # a description is a tag: kept under the tag value limit MLflow checks


def short(text: str, limit: int = SHORT) -> str:
    """One line of at most `limit` characters, the head and the tail kept (the tail often says what to run), cut
    between words or path parts, never inside one."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    tail = limit // 3
    head, end = text[: limit - tail - 3], text[-tail:]
    cut = max(head.rfind(" "), head.rfind("/"))
    head = head[:cut] if cut > 0 else head
    starts = [i for i in (end.find(" "), end.find("/")) if i >= 0]
    end = end[min(starts) + 1:] if starts and min(starts) + 1 < len(end) else end
    return f"{head} … {end}"


def bounded(lines: Sequence[str]) -> str:
    text = "\n".join(lines)
    return text if len(text) <= NOTE else text[: NOTE - 2] + " …"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


PAD = "&nbsp;"  # MLflow's description table has no cell padding of its own: one space's worth each side


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]], padded: bool = False) -> list[str]:
    """A Markdown table; `padded` puts a non-breaking space inside each cell's edges, which MLflow's renderer keeps."""
    pad = PAD if padded else ""
    lines = ["| " + " | ".join(f"{pad}{h}{pad}" for h in head) + " |", "|" + " --- |" * len(head)]
    return lines + ["| " + " | ".join(f"{pad}{_cell(c)}{pad}" for c in row) + " |" for row in rows]


def number(value: float | None, digits: int, unit: str = "") -> str:
    return "(empty)" if value is None else f"{value:,.{digits}f}{unit}"


# Names -----------------------------------------------------------------------------------------------------

def pass_name(tags: dict, run_id: str) -> str:
    """`batch8 · r2p3 · #9 · c3f2a1` in a campaign (round, position, pass index, campaign), `try N` on a retry;
    `batch8 · pass 1a2b3c` outside one (the run id's start): unique in an experiment and readable in legends."""
    variant = tags.get(schema.VARIANT, "?")
    campaign = tags.get(schema.CAMPAIGN_ID, "")
    if campaign:
        name = (f"{variant}{SEP}r{tags.get(schema.ROUND, '?')}p{tags.get(schema.POSITION, '?')}"
                f"{SEP}#{tags.get(schema.PASS_INDEX, '?')}")
        attempt = tags.get(schema.ATTEMPT, "1")
        if attempt not in ("", "1"):
            name += f" try {attempt}"
        return short(name + SEP + campaign[:6], NAME)
    kind = "pass" if tags.get(schema.ROLE, "benchmark") == "benchmark" else tags[schema.ROLE]
    if tags.get(schema.CONFIRMATION) == schema.REFERENCE_OUTPUTS:
        kind = f"{schema.REFERENCE_OUTPUTS} for confirmation"
    return short(f"{variant}{SEP}{kind} {run_id[:6]}", NAME)


def campaign_name(campaign_id: str, variants: Sequence[str]) -> str:
    return short(f"campaign {campaign_id}: {', '.join(variants)}", NAME)


# Short tags ------------------------------------------------------------------------------------------------

def missing_tags(missing: dict[str, str]) -> dict[str, str]:
    """`gpucost.missing.<metric>` = the short reason a measurement is absent from the pass."""
    return {f"{schema.MISSING_PREFIX}{key}": short(reason) for key, reason in missing.items()}


# Descriptions ----------------------------------------------------------------------------------------------

def _checks_failed(tags: dict) -> list[str]:
    """The failed checks' names (their reasons: the status reason, and verdict.json); with the reason on passes
    recorded before the checks tag, which carry one tag per check."""
    if schema.CHECKS in tags:
        return [name for name, passed in verdicts.outcomes(tags[schema.CHECKS]).items() if not passed]
    prefix = schema.CHECK_PREFIX
    return [f"{key[len(prefix):]}: {value[len('fail: '):]}" for key, value in sorted(tags.items())
            if key.startswith(prefix) and value.startswith("fail: ")]


def rejudged_tag(reference_run: str, first: str, at: str) -> str:
    """`gpucost.rejudged`: when a verdict was made again, against which reference run, and what it was first."""
    return f"at {at} against reference run {reference_run} (first {first})"


def _missing(tags: dict) -> list[str]:
    """The missing measurements from their tags, those sharing a reason on one line."""
    by_reason: dict[str, list[str]] = {}
    for key, value in sorted(tags.items()):
        if key.startswith(schema.MISSING_PREFIX) and value:
            by_reason.setdefault(value, []).append(key[len(schema.MISSING_PREFIX):])
    return [f"{', '.join(keys)}: {reason}" for reason, keys in by_reason.items()]


def pass_note(tags: dict, metrics: dict) -> str:
    """A pass's description: variant, status and reason, steady lap, main metric, throughput, failed checks,
    missing measurements, where it ran (campaign slot), exclusion, re-judging and overlap."""
    variant, status = tags.get(schema.VARIANT, "?"), tags.get(schema.STATUS, "") or "not recorded"
    reason = tags.get(schema.STATUS_REASON, "")
    main = tags.get(schema.MAIN_METRIC) or MACRO_F1
    lines = [f"### {variant}{SEP}{status}", ""]
    if reason:
        lines += [short(reason, 400), ""]
    if status == Status.RUNNING:
        return "\n".join(lines + ["The pass is running; this description is completed when it ends."])
    duration = STEADY_LAP_S if metrics.get(STEADY_LAP_S) is not None else PASS_S  # one lap: pass_s is that lap
    lines += markdown_table([STEADY_LAP if duration == STEADY_LAP_S else PASS_S, main, schema.ACCEPTED, "inputs/s",
                             "tokens/s"], [[
        number(metrics.get(duration), 3, " s"), number(metrics.get(main), 4),
        number(metrics.get(schema.ACCEPTED), 0), number(metrics.get(schema.INPUTS_PER_S), 1),
        number(metrics.get(schema.TOKENS_PER_S), 0)]]) + [""]
    facts = []
    if tags.get(schema.CAMPAIGN_ID):
        where = (f"campaign `{tags[schema.CAMPAIGN_ID]}`, round {tags.get(schema.ROUND, '?')}, position "
                 f"{tags.get(schema.POSITION, '?')}, pass {tags.get(schema.PASS_INDEX, '?')}")
        if tags.get(schema.ATTEMPT, "1") not in ("", "1"):
            where += f" (attempt {tags[schema.ATTEMPT]}, retry of run `{tags.get(schema.RETRY_OF, '?')}`)"
        facts.append(f"**Where:** {where}")
    elif tags.get(schema.ROLE) == schema.CONFIRMATION_ROLE:
        facts.append(f"**Where:** {_confirmation_where(tags)}")
    else:
        facts.append(f"**Where:** a single pass ({tags.get(schema.ROLE, 'benchmark')}), outside any campaign")
    if tags.get(schema.DEVICE_NAME):
        facts.append(f"**Device:** {tags[schema.DEVICE_NAME]} ({tags.get(schema.BACKEND, '?')})")
    failed = _checks_failed(tags)
    if failed:
        facts.append("**Failed checks:** " + "; ".join(short(item, 240) for item in failed)
                     + f" (each check's reason: `{schema.VERDICT}`)")
    missing = _missing(tags)
    if missing:
        facts.append("**Missing measurements:** " + "; ".join(missing))
    excluded = exclusion_record.details(tags)
    if excluded.cause:
        facts.append(f"**Excluded** by {excluded.by or '?'} at {excluded.at or '?'}: "
                     f"{short(excluded.cause, 300)} (before: {excluded.status_before or '?'})")
    elif excluded.undone:
        facts.append(f"**Exclusion undone:** {short(excluded.undone, 300)}")
    if tags.get(schema.REJUDGED):
        facts.append(f"**Re-judged** {tags[schema.REJUDGED]}")
    elif tags.get(schema.REJUDGED_AT):
        earlier = rejudged_tag(tags.get(schema.REJUDGED_AGAINST, "?"), tags.get(schema.FIRST_STATUS, "?"),
                               tags[schema.REJUDGED_AT])
        facts.append(f"**Re-judged** {earlier}")
    others = [item for item in tags.get(schema.OVERLAPPED_WITH, "").split(",") if item]
    if others:
        facts.append(f"**Overlap:** {describe_overlap(others, tags.get(schema.HOST, '?'))}")
    if tags.get(schema.CONTENDED):
        facts.append(f"**Contended:** {tags[schema.CONTENDED]}; `gpucost exclude --reason contended` with these "
                     "figures as the note if it should not count")
    if tags.get(schema.THROTTLED):
        facts.append(f"**Throttled:** {tags[schema.THROTTLED]} (the board slowed its clocks: a flag, not a verdict)")
    if tags.get(schema.STARVED):
        facts.append(f"**Starved:** {tags[schema.STARVED]}")
    if tags.get(schema.COLD_SHAPES):
        facts.append(f"**Cold shapes:** {tags[schema.COLD_SHAPES]}")
    if metrics.get(REPETITIONS, 1) > 1:
        facts.append(f"**Repeated:** the clock processed the corpus {metrics[REPETITIONS]:.0f} times (min_laps, "
                     f"min_measured_s): first lap {number(metrics.get(FIRST_LAP_S), 3, ' s')} (each new shape's setup "
                     f"included), {STEADY_LAP} {number(metrics.get(STEADY_LAP_S), 3, ' s')} (the median of the later "
                     f"laps: what the decision reads, and inputs/s), `{PASS_S}` {number(metrics.get(PASS_S), 3, ' s')} "
                     "(the clock's span over its laps)")
    files = (f"`{schema.PREDICTIONS}` (every prediction), `{schema.PREVIEW}` (failed predictions first, then a "
             f"sample), `{schema.VERDICT}`, `{schema.MANIFEST}`")
    facts.append(f"**Files:** {files}")
    return bounded(lines + [f"- {fact}" for fact in facts])


def _confirmation_where(tags: dict) -> str:
    """Where a confirmation run stands: the reference's outputs it is compared against, or a confirmation run of the
    decision with its verdict once a report has read it."""
    verdict = tags.get(schema.CONFIRMATION, "")
    if verdict == schema.REFERENCE_OUTPUTS:
        return ("the reference's outputs on the confirmation corpus (`gpucost confirm`): the confirmation run is "
                "judged against them; not a confirmation, never counted")
    said = f"; verdict in the latest decision: **{verdict}**" if verdict else "; its verdict: `gpucost report`"
    return ("a confirmation run of the decision (`gpucost confirm`) on the disjoint confirmation corpus, its rate at "
            f"the steady lap compared with the benchmark's slowest pass{said}")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def campaign_progress(attempts: Sequence[dict]) -> dict[str, float]:
    """Campaign metrics from its slots' latest attempts (variant, status, steady lap): passes finished and accepted,
    and the median steady lap per variant over its completed, not excluded passes."""
    metrics = {schema.PASSES_FINISHED: float(len(attempts)),
               schema.PASSES_ACCEPTED: float(sum(1 for a in attempts if a["status"] == Status.ACCEPTED))}
    for variant in dict.fromkeys(a["variant"] for a in attempts):
        median = _median(_durations(attempts, variant))
        if median is not None:
            metrics[f"{schema.MEDIAN_STEADY_LAP_PREFIX}{variant}"] = median
    return metrics


def _duration(attempt: dict) -> float | None:
    """An attempt's steady lap, or its pass_s where it has none (one lap, or recorded before steady laps)."""
    for key in (STEADY_LAP_S, PASS_S):
        value = attempt.get(key)
        if value is not None and not math.isnan(value):
            return float(value)
    return None


def _durations(attempts: Sequence[dict], variant: str) -> list[float]:
    return [_duration(a) for a in attempts if a["variant"] == variant and _duration(a) is not None
            and a["status"] != Status.EXCLUDED]


@dataclass(frozen=True)
class Aside:
    """What a campaign's description says beside its passes: the variants not tried (variant -> why), those the
    protocol's race stopped (variant -> its stop line) and its harness overhead per pass."""

    not_tried: Mapping[str, str] = field(default_factory=dict)
    stopped: Mapping[str, str] = field(default_factory=dict)
    overhead_s_per_pass: float | None = None


def campaign_note(campaign_id: str, variants: Sequence[str], passes: int, attempts: Sequence[dict], state: str,
                  protocol_digest: str = "", aside: Aside = Aside()) -> str:
    """A campaign's description: its state and progress, then per variant the passes finished, their statuses and
    their median steady lap, then what it says beside them (`aside`); cheap to recompose after every pass."""
    total = len(variants) * passes
    lines = [f"### campaign {campaign_id}{SEP}{state}, {len(attempts)} of {total} passes finished", "",
             f"{', '.join(variants)}: {passes} passes each, in rotated order (each round starts one variant later)"
             + (f", under protocol `{protocol_digest[:12]}`." if protocol_digest else "."), ""]
    rows = []
    for variant in variants:
        mine = [a for a in attempts if a["variant"] == variant]
        statuses = {s: sum(1 for a in mine if a["status"] == s) for s in dict.fromkeys(a["status"] for a in mine)}
        median = _median(_durations(attempts, variant))
        rows.append([variant, f"{len(mine)} of {passes}",
                     ", ".join(f"{n} {s}" for s, n in statuses.items()) or "none yet", number(median, 3, " s")])
    lines += markdown_table(["variant", "finished", "statuses", f"median {STEADY_LAP}"], rows) + [""]
    for name, why in aside.not_tried.items():
        lines.append(f"- **Not tried:** {name} ({short(why, 240)})")
    for line in aside.stopped.values():
        lines.append(f"- **Stopped by the race:** {short(line, 240)}")
    if aside.overhead_s_per_pass is not None:
        lines.append(f"- **Harness overhead:** {aside.overhead_s_per_pass:.2f} s per pass outside the timed parts")
    lines.append("- The passes are this run's children: expand it in the runs table, or group the runs by the tag "
                 f"`{schema.VARIANT}`. The metrics `{schema.MEDIAN_STEADY_LAP_PREFIX}<variant>`, "
                 f"`{schema.PASSES_FINISHED}` and `{schema.PASSES_ACCEPTED}` are logged once, when the campaign "
                 "finishes; this table follows the passes as they finish.")
    return bounded(lines)


def experiment_note(protocol: Protocol) -> str:
    """The experiment's description: the protocol's question as plain text first (the experiment list shows the
    description's first words: words, not Markdown), then the quality bar, digest, and where to look."""
    a = protocol.acceptance
    buckets = ", ".join(f"{name} {count:,}" for name, count in protocol.buckets.items())
    deadline = protocol.deadline_words or "not declared"
    bar = registry.output(a.output).bar(a)
    warmup = f"{protocol.warmup.get('inputs', '?')} inputs x {protocol.warmup.get('passes', '?')} pass(es)"
    locked = (f"Pre-registered protocol `{protocol.digest[:12]}` ({protocol.path}), locked on this experiment: a "
              f"changed protocol needs a new experiment. Full text: experiment tag `{schema.PROTOCOL_TEXT}`.")
    runs = ("Runs: each pass is named `variant · rRpP · #index · campaign`, under its campaign's parent run; "
            f"`gpucost report` adds a decision run. The saved view `{ui.PASSES_VIEW_NAME}` (the Views menu of the "
            "runs table, and the link gpucost prints) lists the passes fastest first with their status and the "
            f"decision's standing; filter `metrics.accepted = 1`, group by `{schema.VARIANT}` (docs/mlflow-ui.md).")
    lines = [
        short(protocol.question, 400), "", locked, "",
        f"- **Quality bar:** {bar}",
        f"- **Corpus:** {protocol.corpus_size:,} inputs ({buckets}), labels {', '.join(protocol.labels)}",
        f"- **Passes:** {protocol.passes_per_variant} per variant in rotated order; warm-up {warmup}",
        f"- **Deadline:** {deadline}",
        f"- **Exclusions:** {short(protocol.exclusion_rule, 300) or 'no rule declared'}",
        f"- **Digest:** `{protocol.digest}`",
        "", runs,
    ]
    return bounded(lines)


SUPERSEDED = "**Superseded**"


def superseded_note(note: str, by_run_id: str, by_name: str, experiment_id: str, at: datetime | None = None) -> str:
    """An older decision run's description once a newer decision is logged: a line saying which run superseded it
    and when (UTC), above what it said; written once, cut to the tag limit from the end."""
    if note.startswith(SUPERSEDED):
        return note
    when = (at or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%MZ")
    line = (f"{SUPERSEDED} at {when} by the decision run [{by_run_id[:8]}]({ui.run_path(experiment_id, by_run_id)}) "
            f"(`{by_name}`): this decision is kept for the record; the newest decision run is the current one.")
    return bounded([line, "", note])
