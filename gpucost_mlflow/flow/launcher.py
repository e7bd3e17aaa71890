"""The pass launcher: validate inputs, open the MLflow run, record the start, run the child, judge, record the attempt.

Nothing is recorded before every input is valid (flow/preparation.py); after the run opens, every ending (accepted,
rejected, failed, interrupted) is written as one attempt (flow/judging.py judges it, flow/recording.py records it)
and the run is closed. While the run is open the launcher's heartbeat thread (tracking/heartbeat.py) shows it alive
to readers on any host.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.inputs.variants import Declaration
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.board import starved
from gpucost_mlflow.core.measurement.contention import contended
from gpucost_mlflow.core.measurement.repetitions import Laps
from gpucost_mlflow.core.names import (
    CPU_UTILISATION,
    FIRST_LAP_S,
    GPU_UTILISATION,
    OTHER_CPU_S,
    OTHER_CPU_SHARE,
    SHAPE_SETUP_S,
    STEADY_LAP_S,
)
from gpucost_mlflow.execution import child, faults, lanes, runner
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow import judging, recording
from gpucost_mlflow.flow.preparation import PassRequest, Prepared, child_spec, laps_for, measured_for, prepare
from gpucost_mlflow.tracking import experiments, pass_run, schema, store


@dataclass
class PassResult:
    """How a pass ended: its run, status and reason, metrics, whether it locked the protocol, where it was spooled."""

    run_id: str
    status: str
    reason: str
    metrics: dict
    locked_now: bool = False
    spooled: str = ""


def execute(request: PassRequest) -> PassResult:
    """One pass = one MLflow run, ending as accepted, rejected, pending or failed.

    If the launcher itself is stopped (Ctrl-C, an error of its own) after the run opened, the run
    is still closed as a failed attempt whose reason says so (its handle, tracking/pass_run.PassRun), so a resume
    knows to run the slot again.
    """
    prepared = prepare(request)
    store.bound_http_retries()
    store.check()
    client = store.client()
    if request.locked is not None:  # its campaign resolved the experiment and locked protocol and series, once
        experiment_id, experiment_name, locked_now = request.locked.experiment_id, request.experiment, False
    else:
        found = experiments.resolve(client, request.experiment, create=True)
        experiment_id, experiment_name = found.id, found.name
        locked_now = experiments.lock(client, experiment_id, experiment_name, prepared.protocol, prepared.protocol_text)
        lock_series(client, experiment_id, experiment_name, request.declared, [request.variant.name])
    if request.role == "benchmark":  # every pass's corpus is checked against the experiment's: the file may change
        experiments.lock_corpus(client, experiment_id, experiment_name, prepared.manifest.corpus.fingerprint,
                                prepared.protocol.corpus_fingerprint)
    with tempfile.TemporaryDirectory(prefix="gpucost-pass-") as temp, \
            pass_run.PassRun(client, experiment_id, experiment_name, request.variant.name,
                             request.parent_run_id) as run:
        result, interrupted = _run_pass(request, prepared, run.beating(), Path(temp), locked_now)
    if interrupted:
        raise KeyboardInterrupt
    return result


def lock_series(client, experiment_id: str, experiment_name: str, declared: Declaration, names: list[str]) -> None:
    """Lock, on the experiment, each series these variants belong to, as the variants file declares it."""
    for series in dict.fromkeys(declared.variant(name).series for name in names if declared.variant(name).series):
        experiments.lock_series(client, experiment_id, experiment_name,
                                declared.series[series].declaration(declared.variants))


@dataclass
class Opened:
    """A pass whose run is open and its start recorded, waiting for its child's outcome: what judging it needs."""

    request: PassRequest
    prepared: Prepared
    run: pass_run.PassRun
    workdir: Path
    needs_reference: bool
    reference: object


def begin(request: PassRequest, prepared: Prepared, run: pass_run.PassRun, workdir: Path) -> Opened:
    """Inside the open run, while the store is needed: the start record, then the reference pass it is judged
    against."""
    recording.record_start(request, prepared, run, workdir)
    needs_reference = judging.reference_needed(request, prepared)
    reference = judging.reference_pass(run.client, run.experiment_id, prepared, workdir) if needs_reference else None
    return Opened(request, prepared, run, workdir, needs_reference, reference)


def _run_pass(request: PassRequest, prepared: Prepared, run: pass_run.PassRun, workdir: Path,
              locked_now: bool) -> tuple[PassResult, bool]:
    """Inside the open run: start record and reference first (store needed), then the child, then the spool.

    After the child starts nothing needs the store: the attempt is written to the local spool, then
    published; if the store went away meanwhile, the entry waits there for `gpucost sync`. The heartbeat
    (its own thread, swallowing store errors) stops just before the attempt is published.
    """
    opened = begin(request, prepared, run, workdir)
    if request.imported is not None:  # outputs from elsewhere: nothing runs here
        outcome, interrupted = request.imported(workdir), False
        return finish(opened, outcome, interrupted, locked_now), interrupted
    sampler = run.sampling(prepared.protocol.system_metrics_interval_s)
    try:
        outcome, interrupted = _run_child(request, prepared, workdir)
    finally:
        sampler.stop()
    return finish(opened, outcome, interrupted, locked_now), interrupted


def finish(opened: Opened, outcome: PassOutcome, interrupted: bool, locked_now: bool) -> PassResult:
    """The child's outcome judged, its verdict, preview and error written to the work folder, and the attempt handed
    to its run (written to the spool, its heartbeat ended, then published)."""
    request, prepared, workdir = opened.request, opened.prepared, opened.workdir
    stopped_ms = int(time.time() * 1000)
    eval_started = time.perf_counter_ns()
    judged, back, audit_record = judging.judge_outcome(request, prepared, outcome, workdir, opened.needs_reference,
                                                       opened.reference)
    metrics = judging.attempt_metrics(outcome, judged, (time.perf_counter_ns() - eval_started) / 1e9)
    verdict = judging.verdict(prepared, outcome, judged, metrics, audit_record)
    table = judging.preview_table(prepared, back, workdir) if request.outputs is None else None
    if table is not None:
        (workdir / schema.PREVIEW).write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
    (workdir / schema.VERDICT).write_text(json.dumps(verdict.record(), indent=2), encoding="utf-8")
    if outcome.error or judged.status == Status.FAILED:
        (workdir / schema.ERROR).write_text(outcome.error or judged.reason, encoding="utf-8")
    end_status = ("KILLED" if interrupted else "FAILED") if judged.status == Status.FAILED else "FINISHED"
    ending = pass_run.Ending(
        status=judged.status, reason=judged.reason, metrics=metrics, quality_verdict=verdict.quality_verdict,
        memory_counter=verdict.memory_counter, checks=verdict.checks, stopped_ms=stopped_ms,
        missing=verdict.missing_measurements, end_status=end_status, flags=_flags(request, prepared, outcome, metrics),
        outcome_tags={**outcome.measured.tags, **recording.record_observed(workdir, outcome)},
        preview=table is not None)
    if request.outputs is not None:
        ending.outcome_tags[schema.DELIVERY_OUTPUTS] = _keep_outputs(workdir, request.outputs)
    result = PassResult(opened.run.run_id, judged.status, judged.reason, metrics, locked_now)
    result.spooled = opened.run.record(ending, workdir)
    return result


def _keep_outputs(workdir: Path, folder: Path) -> str:
    """A fleet deliverable's outputs moved, once judged, to its folder in the bucket SkyPilot mounts: its run logs
    no copy of them in the tracking store. The folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in registry.exported_files():
        if (workdir / name).exists():
            shutil.move(str(workdir / name), str(folder / name))
    return str(folder)


def _flags(request: PassRequest, prepared: Prepared, outcome: PassOutcome, metrics: dict) -> dict[str, str]:
    """The flags a pass's durations carry (never its verdict): contended (other processes' CPU time, or other
    processes on its GPU), throttled (the board's throttle reasons around the clock), starved (its device busy less
    than the protocol's min_utilisation during the measured part), cold_shapes (its first lap above 1.5 steady laps:
    each new shape's setup)."""
    protocol, board = prepared.protocol, outcome.board.facts.get("board") or {}
    busy = contended(metrics.get(OTHER_CPU_S), metrics.get(OTHER_CPU_SHARE), protocol.max_other_cpu_share)
    if request.variant.settings.lanes > 1:  # a pass split over lanes counts its own other lanes as other processes
        busy = ""
    busy = "; ".join(filter(None, [busy, board.get("other_processes", "")]))
    on_gpu = GPU_UTILISATION in metrics or bool(board)
    idle = starved(metrics.get(GPU_UTILISATION if on_gpu else CPU_UTILISATION), protocol.min_utilisation,
                   "GPU" if on_gpu else "CPU")
    laps = Laps(metrics.get(FIRST_LAP_S), metrics.get(STEADY_LAP_S), metrics.get(SHAPE_SETUP_S))
    cold = laps.cold() if laps.first_s is not None else ""
    found = {schema.CONTENDED: busy, schema.THROTTLED: board.get("throttled", ""), schema.STARVED: idle,
             schema.COLD_SHAPES: cold}
    return {key: value for key, value in found.items() if value}


def spec_of(request: PassRequest, prepared: Prepared, workdir: Path) -> runner.PassSpec:
    """The child's spec of one pass: its corpus, model and work folder, the variant's settings, the protocol's rules."""
    return child_spec(
        request.corpus_path.resolve(), request.model_path, workdir, request.variant.settings, prepared.protocol,
        fault=os.environ.get(faults.ENV, ""),
        workload=prepared.manifest.workload,
        # A lanes pass is not repeated: its lanes would repeat out of step; a short one is flagged instead.
        min_measured_s=measured_for(request, prepared.protocol) if prepared.lanes is None else None,
        # A lanes pass's span joins its lanes' clocks into one corpus: one lap, its rate said to include setup.
        min_laps=laps_for(request, prepared.protocol) if prepared.lanes is None else 1,
        cooldown_s=prepared.protocol.cooldown_s,
        seed=request.seed,
    )


def _run_child(request: PassRequest, prepared: Prepared, workdir: Path) -> tuple[PassOutcome, bool]:
    """The pass's child (a lanes variant: one per lane, merged), started with its spec and read back: its outcome and
    whether the launcher was interrupted."""
    spec = spec_of(request, prepared, workdir)
    if request.on_child_start is not None:
        request.on_child_start(workdir)
    if prepared.lanes is not None:
        return lanes.run_pass(spec, prepared.corpus.rows, prepared.lanes, workdir)
    returncode, interrupted = child.run(spec, workdir)
    return child.read_outcome(workdir, returncode, interrupted), interrupted
