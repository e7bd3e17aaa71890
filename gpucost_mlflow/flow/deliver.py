"""A delivery (`gpucost deliver --corpora DIR`): many production corpora through one child each `per_child` of them,
loading and warming up once per child, as the forecast counts start-up (`deliverables.per_child`). A lanes variant
is delivered one corpus at a time, each through fresh lane children (a lanes pass over one corpus), whatever
`per_child` says; the forecast counts a start-up per corpus for it.

Every corpus is checked before any run exists. Each is one deliverable pass (its own nested run under the delivery's
run, judged and exported as `gpucost pass --role deliverable` judges and exports it); its load and warm-up are the
child's first corpus's, and the others say so as missing measurements.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import Declaration, Variant
from gpucost_mlflow.execution import child, lanes
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow import launcher
from gpucost_mlflow.flow.preparation import PassRequest, Prepared, prepare
from gpucost_mlflow.tracking import delivery_run, experiments, pass_run, store


@dataclass(frozen=True)
class DeliveryPlan:
    """What a delivery runs: one variant over every corpus of a folder, `per_child` corpora per child (None: all)."""

    variant: Variant
    corpora: tuple[Path, ...]
    model_path: Path
    experiment: str
    protocol_path: Path
    declared: Declaration
    code_root: Path
    per_child: int | None = None
    tags: tuple[dict[str, str], ...] = ()  # each corpus's own tags, in order (a delivery fleet's key and worker)
    outputs: Path | None = None  # a delivery fleet's bucket folder: each corpus's outputs in <folder>/<corpus stem>


@dataclass
class Delivered:
    """How a delivery ended: its run, each corpus's pass result in order, the children that ran."""

    run_id: str
    results: list[launcher.PassResult]
    children: int


def corpora_in(folder: Path) -> tuple[Path, ...]:
    """The folder's corpus files (*.jsonl), in name order; none is refused in one line."""
    if not folder.is_dir():
        raise GpucostError(f"{folder}: not a folder of corpora")
    found = tuple(sorted(folder.glob("*.jsonl")))
    if not found:
        raise GpucostError(f"{folder}: no corpus (*.jsonl) to deliver")
    return found


def per_child(plan: DeliveryPlan) -> int | None:
    """The corpora one child processes: 1 for a lanes variant (its lanes split one corpus), else `per_child`."""
    return 1 if plan.variant.settings.lanes > 1 else plan.per_child


def deliver(plan: DeliveryPlan, on_child: Callable[[int, list[launcher.PassResult]], None] | None = None) -> Delivered:
    """Every corpus checked, the experiment locked once, then one child per `per_child` corpora (a lanes variant:
    fresh lane children per corpus)."""
    requests = [PassRequest(variant=plan.variant, corpus_path=corpus, model_path=plan.model_path,
                            experiment=plan.experiment, protocol_path=plan.protocol_path,
                            declared=plan.declared, role="deliverable", code_root=plan.code_root,
                            slot_tags=dict(plan.tags[number]) if plan.tags else {},
                            outputs=plan.outputs / corpus.stem if plan.outputs else None)
                for number, corpus in enumerate(plan.corpora)]
    prepared = [prepare(request) for request in requests]
    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment = experiments.resolve(client, plan.experiment, create=True)
    experiment_id, name = experiment.id, experiment.name
    locked_now = experiments.lock(client, experiment_id, name, prepared[0].protocol, prepared[0].protocol_text)
    if plan.variant.series:
        series = plan.declared.series[plan.variant.series]
        experiments.lock_series(client, experiment_id, name, series.declaration(plan.declared.variants))
    lanes_note = " (a lanes variant: fresh lane children per corpus)" if plan.variant.settings.lanes > 1 else ""
    run_id = delivery_run.open_delivery(client, experiment_id, plan.variant.name, len(requests), per_child(plan),
                                        lanes_note)
    requests = [replace(request, parent_run_id=run_id) for request in requests]
    delivered, state = Delivered(run_id, [], 0), "FAILED"
    size = per_child(plan) or len(requests)
    try:
        for first in range(0, len(requests), size):
            results = _one_child(requests[first:first + size], prepared[first:first + size], client,
                                 experiment, locked_now, run_id)
            delivered.results += results
            delivered.children += 1
            if on_child is not None:
                on_child(delivered.children, results)
        state = "FINISHED"
    except KeyboardInterrupt:
        state = "KILLED"
        raise
    finally:
        delivery_run.close_delivery(client, run_id, [r.status for r in delivered.results], delivered.children, state)
    return delivered


def _one_child(requests: list[PassRequest], prepared: list[Prepared], client, experiment: experiments.Experiment,
               locked_now: bool, delivery_id: str) -> list[launcher.PassResult]:
    """One child for these corpora (a lanes variant: its lane children for one corpus): their runs opened and started,
    the child run once over all of them, then each corpus's outcome judged and recorded; a launcher stopped on the way
    closes the runs it had not recorded."""
    protocol, experiment_id, experiment_name = prepared[0].protocol, experiment.id, experiment.name
    with tempfile.TemporaryDirectory(prefix="gpucost-delivery-") as temp:
        folders = [Path(temp) / f"{number:05d}" for number in range(len(requests))]
        for folder in folders:
            folder.mkdir()
        with contextlib.ExitStack() as stack:
            runs = [stack.enter_context(pass_run.PassRun(client, experiment_id, experiment_name, r.variant.name,
                                                         r.parent_run_id)) for r in requests]
            pass_run.shared_heartbeat(runs)
            opened = [launcher.begin(r, p, run, f) for r, p, run, f in zip(requests, prepared, runs, folders)]
            spec = replace(launcher.spec_of(requests[0], prepared[0], folders[0]),
                           more=[{"corpus_path": str(r.corpus_path.resolve()), "workdir": str(f)}
                                 for r, f in zip(requests[1:], folders[1:])])
            sampler = runs[0].sampling(protocol.system_metrics_interval_s, run_id=delivery_id)
            try:
                outcomes, interrupted = _run(spec, prepared[0], folders)
            finally:
                sampler.stop()
            results = [launcher.finish(one, outcome, interrupted, locked_now) for one, outcome in zip(opened, outcomes)]
    if interrupted:
        raise KeyboardInterrupt
    return results


def _run(spec, prepared: Prepared, folders: list[Path]) -> tuple[list[PassOutcome], bool]:
    """The child over these corpora, each corpus's outcome in order, and whether the launcher was interrupted; a
    lanes variant's one corpus through its lane children, started fresh for it."""
    if prepared.lanes is not None:
        outcome, interrupted = lanes.run_pass(spec, prepared.corpus.rows, prepared.lanes, folders[0])
        return [outcome], interrupted
    code, interrupted = child.run(spec, folders[0])
    return [child.read_outcome(folder, code, interrupted) for folder in folders], interrupted
