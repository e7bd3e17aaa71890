"""The configurations of a report's attempts (PROTOCOL.md §2): one per identity of the benchmark attempts, as the
runs recorded it (report/measured.py), with the figures the decision reads, from their rows (plain pandas)."""

from __future__ import annotations

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
from gpucost_mlflow.report.measured import ReportAttempts


@dataclass(frozen=True)
class AttemptSpans:
    """Every attempt's run on one device, start to end on its host, and how many are lower bounds (no end time)."""

    spans: tuple[Span, ...]
    estimated: int


EPOCH = pd.Timestamp(0, tz="UTC")


def attempt_spans(rows: pd.DataFrame) -> AttemptSpans:
    """Each attempt's run as a span; one without an end time lasts its recorded stage times (a lower bound)."""
    spans, estimated = [], 0
    # Whole microseconds over 1e6, as Timestamp.timestamp() gives them: nanoseconds over 1e9 (pandas 2's unit) would
    # differ in the last bit from the microseconds pandas 3 parses, and spans must not move with the pandas version.
    starts = pd.to_datetime(rows["start_time"], utc=True).dt.as_unit("us").fillna(EPOCH)
    begins = starts.astype("int64") / 1e6
    staged = rows[list(TIMINGS)].astype(float).sum(axis=1, skipna=True)
    for begin, wall, host, stages in zip(begins, rows["wall_s"], rows["host"], staged):
        if pd.notna(wall):
            length = float(wall)
        else:
            estimated += 1
            length = float(stages)
        spans.append(Span(float(begin), float(begin) + length, host if isinstance(host, str) else ""))
    return AttemptSpans(tuple(spans), estimated)


BESIDE = ("run_id", "host", "overlapped_with", "contended")  # the columns `_beside` reads


def _beside(row, concurrent: dict[str, int]) -> str:
    """What ran beside one pass: passes whose measured clock overlapped it, attempts whose run overlapped it."""
    measured = [r for r in str(row.overlapped_with or "").split(",") if r]
    busy = str(getattr(row, "contended", "") or "")
    if busy and busy != "nan":
        return f"contended: {busy}"
    if measured:
        return f"its measured clock overlapped {len(measured)} other pass(es) on host {row.host or 'unknown'}"
    running = concurrent.get(row.run_id, 0)
    if running:
        return f"{running} other attempt(s) ran at the same time on host {row.host or 'unknown'}"
    return ""


def declared_deliverables(table: pd.DataFrame, corpus_size: int | None) -> pd.DataFrame:
    """The accepted deliverable passes on corpora the protocol declares: of its corpus.size (the unit its volume is
    counted in; a 10-input file is not one of 4,000 corpora of 500), and not a corpus benchmark passes ran on."""
    delivered = table[(table["role"] == "deliverable") & (table["status"] == Status.ACCEPTED)]
    benchmarked = set(table[table["role"] == "benchmark"]["corpus_fingerprint"])
    delivered = delivered[~delivered["corpus_fingerprint"].isin(benchmarked)]
    if corpus_size is not None and EXPECTED_IDS in delivered:
        delivered = delivered[delivered[EXPECTED_IDS] == corpus_size]
    return delivered


def excluded_passes(rows: pd.DataFrame) -> tuple[ExcludedPass, ...]:
    """The excluded passes of one configuration, from the four columns they need (a row of every column, as a
    named tuple, cost more than the rest of a configuration at thousands of runs)."""
    before = rows["status_before_exclusion"] if "status_before_exclusion" in rows else [""] * len(rows)
    seconds = rows[STEADY_LAP_S].fillna(rows[PASS_S]) if STEADY_LAP_S in rows else rows[PASS_S]  # as it would count
    return tuple(ExcludedPass(run_id, status or "", None if pd.isna(value) else float(value), str(reason or ""))
                 for run_id, status, value, reason in zip(rows["run_id"], before, seconds, rows["reason"]))


def configurations(measured: ReportAttempts, corpus_size: int | None = None) -> list[Configuration]:
    """One Configuration per identity of the benchmark attempts (device, variant, workload, model revision, corpus,
    stack: PROTOCOL.md §2), in first-seen order; configurations sharing a device and variant are told apart by name.
    Accepted deliverables count only on corpora the protocol declares: `corpus_size` inputs each (the size its
    volume is counted in), never a benchmark corpus."""
    table = measured.table
    groups = measured.benchmark
    bench = table.iloc[sorted(p for positions in groups.values() for p in positions)]
    delivered = declared_deliverables(table, corpus_size)
    walls = {device: attempt_spans(rows) for device, rows in bench.groupby("device", sort=False)}
    beside = concurrent(list(zip(bench["run_id"], attempt_spans(bench).spans)))
    siblings: dict[tuple[str, str], set[Identity]] = {}
    for identity in groups:
        siblings.setdefault((identity.device, identity.variant), set()).add(identity)
    configs = []
    for identity, positions in groups.items():
        rows = measured.rows_at(positions)
        device, variant = identity.device, identity.variant
        completed = rows[rows[PASS_S].notna() & (rows["status"] != Status.EXCLUDED)]
        medians = {key: float(completed[key].median()) for key in (LOAD_S, WARMUP_S, EVAL_S, EXPORT_S, SHAPE_SETUP_S)
                   if key in completed and completed[key].notna().any()}
        if CONVERT_S in rows and rows[CONVERT_S].notna().any():  # paid by the pass that exported, whatever its end
            medians[CONVERT_S] = float(rows[CONVERT_S].median())
        excluded = rows[rows["status"] == Status.EXCLUDED]
        done = delivered[(delivered["device"] == device) & (delivered["variant"] == variant)]
        configs.append(Configuration(
            device=device,
            variant=variant,
            statuses=[Status.INTERRUPTED if interrupted(status, reason) else status
                      for status, reason in zip(rows["status"], rows["reason"])],
            durations=Durations(one_corpus_each(_column(completed, FIRST_LAP_S), list(completed[PASS_S]),
                                                _column(completed, STEADY_LAP_S))),
            medians=medians,
            accepted_deliverables=int(done["corpus_fingerprint"].nunique()),
            attempt_spans=walls[device].spans,
            walls_estimated=walls[device].estimated,
            gpus=gpus_used(identity, rows["backend"].iloc[0]),
            identity=identity,
            distinction=identity.distinction(siblings[(device, variant)]),
            pass_runs=tuple(completed["run_id"]),
            pass_causes=tuple(_beside(row, beside) for row in completed[list(BESIDE)].itertuples(index=False)),
            excluded=excluded_passes(excluded),
            output_tokens_per_input=tokens_per_input(rows, (TOKENS_GENERATED,)),
            input_tokens_per_input=tokens_per_input(rows, (TOKENS_INPUT, TOKENS_PROMPT)),
            measured_s=tuple(float(v) for v in (completed[MEASURED_TOTAL_S].fillna(completed[PASS_S])
                                                if MEASURED_TOTAL_S in completed else completed[PASS_S])),
            not_shown=versus_reference.not_shown(rows),
            timed_s=steady_or_whole(_column(completed, STEADY_LAP_S), list(completed[PASS_S])),
            setup_in_rate=len(completed) - int(completed[STEADY_LAP_S].notna().sum()) if STEADY_LAP_S in completed
            else len(completed),
            stopped=next((v for v in rows["stopped"] if isinstance(v, str) and v), ""),
        ))
    return configs


def _column(rows: pd.DataFrame, name: str) -> list:
    """A metric's values over the rows, [] where no row recorded it (a store written before it existed)."""
    return list(rows[name]) if name in rows else []


def rate_notes(configs: list[Configuration]) -> list[str]:
    """One line per configuration whose counted passes were recorded before steady laps (issue 62): the rate the
    decision reads for them includes each new input shape's setup, unlike a pass recorded since."""
    return [f"{config.name}: {config.setup_in_rate} of its {len(config.durations.values)} counted passes "
            f"{SETUP_IN_RATE}" for config in configs if config.setup_in_rate]


def tokens_per_input(rows: pd.DataFrame, names: tuple[str, ...]) -> float | None:
    """The median over a configuration's accepted passes of the first of `names` they counted, per input observed
    (output tokens: generation; input tokens: an encoder's real tokens, a generation's prompt); None when no
    accepted pass counted them."""
    for name in names:
        if name not in rows:
            continue
        counted = rows[(rows["status"] == Status.ACCEPTED) & rows[name].notna() & (rows[OBSERVED_IDS] > 0)]
        if len(counted):
            return float((counted[name] / counted[OBSERVED_IDS]).median())
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
