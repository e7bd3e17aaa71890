"""The configurations of a report's attempts (PROTOCOL.md §2): one per identity of the benchmark attempts, as the
runs recorded it (report/measured.py), with the figures the decision reads, from the attempts' attributes (pandas
for the medians only)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.judging.status import Status, interrupted
from gpucost_mlflow.core.measurement.repetitions import SETUP_IN_RATE, one_corpus_each, steady_or_whole
from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.measurement.timeline import Span, concurrent
from gpucost_mlflow.core.money.decision import Configuration, ExcludedPass
from gpucost_mlflow.core.names import (
    CONVERT_S,
    EVAL_S,
    EXPECTED_IDS,
    EXPORT_S,
    FIRST_LAP_S,
    LOAD_S,
    MEASURED_TOTAL_S,
    OBSERVED_IDS,
    PASS_S,
    SHAPE_SETUP_S,
    STEADY_LAP_S,
    TIMINGS,
    TOKENS_GENERATED,
    TOKENS_INPUT,
    TOKENS_PROMPT,
    WARMUP_S,
)
from gpucost_mlflow.report import versus_reference
from gpucost_mlflow.report.measured import BENCHMARK, ReportAttempts, attempts_in, median_of
from gpucost_mlflow.tracking.attempts_table import Attempt
from gpucost_mlflow.tracking.schema import DELIVERABLE_ROLE


@dataclass(frozen=True)
class AttemptSpans:
    """Every attempt's run on one device, start to end on its host, and how many are lower bounds (no end time)."""

    spans: tuple[Span, ...]
    estimated: int


def attempt_spans(attempts: Sequence[Attempt] | pd.DataFrame) -> AttemptSpans:
    """Each attempt's run as a span; one without an end time lasts its recorded stage times (a lower bound)."""
    spans, estimated = [], 0
    for a in attempts_in(attempts):
        # Whole microseconds over 1e6, as the table's timestamps gave them (0: no start recorded).
        begin = (a.timings.start_ms or 0) * 1000 / 1e6
        wall = a.timings.wall_s
        if wall is None:
            estimated += 1
            wall = sum(float(a.metrics[key]) for key in TIMINGS if not _missing(a.metrics.get(key)))
        spans.append(Span(begin, begin + wall, a.place.host))
    return AttemptSpans(tuple(spans), estimated)


def _missing(value: float | None) -> bool:
    return value is None or math.isnan(value)


def _beside(a: Attempt, concurrent: dict[str, int]) -> str:
    """What ran beside one pass: passes whose measured clock overlapped it, attempts whose run overlapped it."""
    measured = [r for r in a.overlapped_with.split(",") if r]
    if a.facts.contended:
        return f"contended: {a.facts.contended}"
    if measured:
        return f"its measured clock overlapped {len(measured)} other pass(es) on host {a.place.host or 'unknown'}"
    running = concurrent.get(a.run_id, 0)
    if running:
        return f"{running} other attempt(s) ran at the same time on host {a.place.host or 'unknown'}"
    return ""


def declared_deliverables(attempts: Sequence[Attempt], corpus_size: int | None) -> list[Attempt]:
    """The accepted deliverable passes on corpora the protocol declares: of its corpus.size (the unit its volume is
    counted in; a 10-input file is not one of 4,000 corpora of 500), and not a corpus benchmark passes ran on."""
    benchmarked = {a.identity.corpus_fingerprint for a in attempts if a.role == BENCHMARK}
    return [a for a in attempts if a.role == DELIVERABLE_ROLE and a.status == Status.ACCEPTED
            and a.identity.corpus_fingerprint not in benchmarked
            and (corpus_size is None or a.metrics.get(EXPECTED_IDS) == corpus_size)]


def excluded_passes(attempts: Sequence[Attempt]) -> tuple[ExcludedPass, ...]:
    """The excluded passes of one configuration: what each would count (its steady lap, else its pass_s)."""
    return tuple(ExcludedPass(a.run_id, a.status_before_exclusion, _counted_s(a), a.reason) for a in attempts)


def _counted_s(a: Attempt) -> float | None:
    for key in (STEADY_LAP_S, PASS_S):
        if not _missing(a.metrics.get(key)):
            return float(a.metrics[key])
    return None


def configurations(measured: ReportAttempts, corpus_size: int | None = None) -> list[Configuration]:
    """One Configuration per identity of the benchmark attempts (device, variant, workload, model revision, corpus,
    stack: PROTOCOL.md §2), in first-seen order; configurations sharing a device and variant are told apart by name.
    Accepted deliverables count only on corpora the protocol declares: `corpus_size` inputs each (the size its
    volume is counted in), never a benchmark corpus."""
    groups = measured.benchmark
    bench = [measured.attempts[p] for p in sorted(p for positions in groups.values() for p in positions)]
    delivered = declared_deliverables(measured.attempts, corpus_size)
    on_device: dict[str, list[Attempt]] = {}
    for a in bench:
        on_device.setdefault(a.identity.device, []).append(a)
    walls = {device: attempt_spans(found) for device, found in on_device.items()}
    beside = concurrent(list(zip((a.run_id for a in bench), attempt_spans(bench).spans)))
    siblings: dict[tuple[str, str], set[Identity]] = {}
    for identity in groups:
        siblings.setdefault((identity.device, identity.variant), set()).add(identity)
    return [_configuration(identity, [measured.attempts[p] for p in positions], walls[identity.device], beside,
                           siblings[(identity.device, identity.variant)], delivered)
            for identity, positions in groups.items()]


def _configuration(identity: Identity, rows: list[Attempt], walls: AttemptSpans, beside: dict[str, int],
                   siblings: set[Identity], delivered: list[Attempt]) -> Configuration:
    """One configuration of its benchmark attempts (`rows`, in order): its durations, medians and counts."""
    device, variant = identity.device, identity.variant
    completed = [a for a in rows if not _missing(a.metrics.get(PASS_S)) and a.status != Status.EXCLUDED]
    medians = {key: median for key in (LOAD_S, WARMUP_S, EVAL_S, EXPORT_S, SHAPE_SETUP_S)
               if (median := median_of(completed, key)) is not None}
    if (convert := median_of(rows, CONVERT_S)) is not None:  # paid by the pass that exported, whatever its end
        medians[CONVERT_S] = convert
    steady = [a.metrics.get(STEADY_LAP_S) for a in completed]
    whole = [float(a.metrics[PASS_S]) for a in completed]
    return Configuration(
        device=device,
        variant=variant,
        statuses=[Status.INTERRUPTED if interrupted(a.status, a.reason) else a.status for a in rows],
        durations=Durations(one_corpus_each([a.metrics.get(FIRST_LAP_S) for a in completed], whole, steady)),
        medians=medians,
        accepted_deliverables=len({a.identity.corpus_fingerprint for a in delivered
                                   if (a.identity.device, a.identity.variant) == (device, variant)}),
        attempt_spans=walls.spans,
        walls_estimated=walls.estimated,
        gpus=gpus_used(identity, rows[0].place.backend),
        identity=identity,
        distinction=identity.distinction(siblings),
        pass_runs=tuple(a.run_id for a in completed),
        pass_causes=tuple(_beside(a, beside) for a in completed),
        excluded=excluded_passes([a for a in rows if a.status == Status.EXCLUDED]),
        output_tokens_per_input=tokens_per_input(rows, (TOKENS_GENERATED,)),
        input_tokens_per_input=tokens_per_input(rows, (TOKENS_INPUT, TOKENS_PROMPT)),
        measured_s=tuple(float(v) if not _missing(v := a.metrics.get(MEASURED_TOTAL_S)) else float(a.metrics[PASS_S])
                         for a in completed),
        not_shown=versus_reference.not_shown(rows),
        timed_s=steady_or_whole(steady, whole),
        setup_in_rate=sum(1 for value in steady if _missing(value)),
        stopped=next((a.stopped for a in rows if a.stopped), ""),
        attempts=tuple(rows),
    )


def rate_notes(configs: list[Configuration]) -> list[str]:
    """One line per configuration whose counted passes were recorded before steady laps (issue 62): the rate the
    decision reads for them includes each new input shape's setup, unlike a pass recorded since."""
    return [f"{config.name}: {config.setup_in_rate} of its {len(config.durations.values)} counted passes "
            f"{SETUP_IN_RATE}" for config in configs if config.setup_in_rate]


def tokens_per_input(attempts: Sequence[Attempt], names: tuple[str, ...]) -> float | None:
    """The median over a configuration's accepted passes of the first of `names` they counted, per input observed
    (output tokens: generation; input tokens: an encoder's real tokens, a generation's prompt); None when no
    accepted pass counted them."""
    for name in names:
        counted = [a.metrics[name] / a.metrics[OBSERVED_IDS] for a in attempts
                   if a.status == Status.ACCEPTED and not _missing(a.metrics.get(name))
                   and not _missing(observed := a.metrics.get(OBSERVED_IDS)) and observed > 0]
        if counted:
            return float(pd.Series(counted, dtype=float).median())
    return None


def gpus_used(identity: Identity, backend: str) -> int:
    """GPUs one pass of a configuration holds: its lanes on a GPU backend; CPU lanes share one machine's cores."""
    return 1 if backend == "cpu" else int(identity.lanes or 1)


def identity_notes(configs: list[Configuration]) -> list[str]:
    """One line per device and variant whose passes are several configurations, naming the differing fields."""
    groups: dict[tuple, list[Configuration]] = {}
    for config in configs:
        groups.setdefault((config.device, config.variant), []).append(config)
    notes = []
    for (device, variant), members in groups.items():
        if len(members) > 1:
            notes.append(f"{variant} on {device} is {len(members)} configurations, reported apart: "
                         f"{'; '.join(m.distinction for m in members)} (PROTOCOL.md §2: when these differ, a "
                         "conclusion is about the whole tested configurations)")
    return notes
