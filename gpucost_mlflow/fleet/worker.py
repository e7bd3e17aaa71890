"""A delivery worker's own side, on its machine: its share of the corpora by its SkyPilot rank, each corpus looked
up by its key first. A corpus delivered for this decision is skipped; one a lost machine left running is ended
interrupted and delivered again (an interruption is no failure of the corpus); one that failed is retried once, by
the attempt SkyPilot starts when the worker exits RETRY_EXIT, then named failed. The rest are delivered as `gpucost
deliver` delivers them: one child loading and warming up once per `deliverables.per_child` corpora."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.fleet import delivery
from gpucost_mlflow.core.fleet.jobs import MANAGED_JOB_ID
from gpucost_mlflow.core.inputs.fingerprints import sha256_file
from gpucost_mlflow.core.inputs.variants import read_declaration
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.fleet.deliver import worker
from gpucost_mlflow.flow import deliver as delivering
from gpucost_mlflow.tracking import delivered, experiments, schema, store


@dataclass(frozen=True)
class Share:
    """What one worker delivers: its fleet, the decision (experiment, variant, decision run), its rank among the
    workers, and the inputs mounted on its machine."""

    fleet_id: str
    experiment: str
    variant: str
    decision_id: str
    rank: int
    workers: int
    corpora: Path
    protocol: Path
    variants: Path
    model: Path
    accelerator: str
    code_root: Path
    only: tuple[str, ...] = ()  # the corpora this fleet delivers, when not every one of the folder
    outputs: Path | None = None  # where each deliverable's outputs go (the bucket's folder), not the tracking store


@dataclass
class WorkerRun:
    """What the worker did: corpora delivered now, skipped (delivered before), failed for good, runs it ended."""

    delivered: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    retry: bool = False  # a corpus failed its first try: the worker asks SkyPilot for another attempt


def run_worker(share: Share, echo: Callable[[str], None] = print) -> WorkerRun:
    """Deliver this worker's share, skipping what is already delivered for the decision."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment_id = experiments.resolve(client, share.experiment, create=True).id
    job_id = os.environ.get(MANAGED_JOB_ID, "")
    names = [path.name for path in share.corpora.glob("*.jsonl") if not share.only or path.name in share.only]
    done, todo, tags = WorkerRun(), [], []
    for name in delivery.share(names, share.rank, share.workers):
        path = share.corpora / name
        key = delivery.key(sha256_file(path), share.decision_id)
        found = delivered.by_key(client, experiment_id, key)
        done.ended += delivered.end_left_running(client, found, job_id)
        if any(one.status == Status.ACCEPTED for one in found):
            done.skipped.append(name)
            continue
        if delivery.failures([one.attempt() for one in found], name) >= delivery.MAX_TRIES:
            done.failed.append(name)
            continue
        todo.append(path)
        tags.append({schema.FLEET_ID: share.fleet_id, schema.FLEET_JOB: job_id, delivered.DELIVERY_KEY: key,
                     delivered.DELIVERY_CORPUS: name, schema.FLEET_GPU: worker(share.accelerator, share.rank)})
    for run_id in done.ended:
        echo(f"deliverable run {run_id} was left running by the lost machine: recorded interrupted, delivered again")
    if not todo:
        return done
    protocol = load_protocol(share.protocol)
    declared = read_declaration(share.variants)
    plan = delivering.DeliveryPlan(variant=declared.variant(share.variant), corpora=tuple(todo),
                                   model_path=share.model, experiment=share.experiment, protocol_path=share.protocol,
                                   declared=declared, code_root=share.code_root,
                                   per_child=protocol.deliverables.per_child, tags=tuple(tags),
                                   outputs=share.outputs)
    result = delivering.deliver(plan)
    for path, outcome in zip(todo, result.results):
        (done.delivered if outcome.status == Status.ACCEPTED else done.failed).append(path.name)
    tries = {path.name: delivery.failures([one.attempt() for one in delivered.by_key(client, experiment_id, tag[
        delivered.DELIVERY_KEY])], path.name) for path, tag in zip(todo, tags) if path.name in done.failed}
    done.retry = any(count < delivery.MAX_TRIES for count in tries.values())
    return done
