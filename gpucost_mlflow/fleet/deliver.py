"""`gpucost fleet deliver`: the decision delivered on the lots its plan rents, through SkyPilot. Check the budget,
write the one task (core/fleet/delivery_task.py) and each worker's share, have SkyPilot itself accept the task, then
(unless a dry run) record the fleet run and launch the task as one managed job per lot, each told its rank."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import ROUND_UP, Decimal
from pathlib import Path

import yaml

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.fleet import delivery, delivery_task, tracking_uri
from gpucost_mlflow.core.fleet.delivery import Decision
from gpucost_mlflow.core.fleet.task import Inputs, Machine, user_code
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.fleet import skypilot, wheel
from gpucost_mlflow.fleet.launch import _TaskDumper, check_reachable
from gpucost_mlflow.market import require

ROLE = "delivery"  # the fleet run's `kind` param: a delivery fleet, beside the measuring ones


@dataclass
class DeliveryRequest:
    """Everything `gpucost fleet deliver` was given, with the decision it delivers."""

    fleet_id: str
    decision: Decision
    corpora: Path
    max_cost: Decimal
    model: Path
    protocol: Path
    variants: Path
    out: Path
    torch_version: str
    setup_hours: Decimal
    spot: bool = False
    bucket: str = ""
    wheel: Path | None = None
    dry_run: bool = False
    environ: dict[str, str] = field(default_factory=dict)
    only: tuple[str, ...] = ()  # the corpora of the folder to deliver (the ones a status found missing), else all
    catalogs: tuple[Path, ...] = ()  # the catalogs the decision was read over: the finishing command names them


@dataclass
class Delivering:
    """The delivery fleet: its task file, each worker's share by rank, the job ids by rank (empty on a dry run)."""

    task: Path
    shares: list[list[str]]
    job_ids: list[int] = field(default_factory=list)
    run_id: str = ""


def worker(accelerator: str, rank: int) -> str:
    """A worker's name on the fleet run (its facts' tags): the accelerator and its rank, `L4-w0`."""
    return f"{accelerator}-w{rank}"


def deliver(request: DeliveryRequest, echo: Callable[[str], None] = print) -> Delivering:
    """Check, price, write and (unless a dry run) launch the delivery fleet."""
    decision = request.decision
    if not request.dry_run:
        check_reachable(request.environ)
        if not request.bucket:
            raise GpucostError("a delivery's outputs come back through a bucket, never the tracking store: --bucket "
                               "URI (s3://..., gs://...) holding the corpora, mounted on every worker; nothing "
                               "launched")
    echo(decision.worst_line())
    delivery.check_budget(decision, request.max_cost)
    names = [path.name for path in sorted(request.corpora.glob("*.jsonl"))]
    unknown = sorted(set(request.only) - set(names))
    if unknown:
        raise GpucostError(f"--only names {', '.join(unknown)}, not in {request.corpora}; nothing launched")
    names = [name for name in names if not request.only or name in request.only]
    if not names:
        raise GpucostError(f"{request.corpora}: no corpus (*.jsonl) to deliver; nothing launched")
    if len(names) < decision.lots:  # never a worker without a corpus
        decision = request.decision = replace(decision, lots=len(names))
    shares = [delivery.share(names, rank, decision.lots) for rank in range(decision.lots)]
    built = wheel.given(request.wheel) if request.wheel else wheel.build(request.out / "wheel")
    inputs = Inputs(built, request.corpora, request.model, request.protocol, request.variants,
                    user_code(load_variants(request.variants), request.variants))  # the code its variants name
    inputs.check()
    secrets = tracking_uri.secrets(request.environ)
    machine = Machine((decision.provider,) if decision.provider else (), request.spot, request.torch_version,
                      request.setup_hours, decision.forecast_hours)
    config = delivery_task.task_config(request.fleet_id, decision, machine=machine, inputs=inputs,
                                       secret_names=sorted(secrets), bucket=request.bucket, only=request.only)
    skypilot.task(config)  # SkyPilot itself accepts it (secrets named, their values given only at launch)
    request.out.mkdir(parents=True, exist_ok=True)
    task_file = request.out / f"{delivery_task.name(request.fleet_id)}.yaml"
    task_file.write_text(yaml.dump(config, Dumper=_TaskDumper, sort_keys=False), encoding="utf-8")
    (request.out / "shares.json").write_text(json.dumps({worker(decision.accelerator, r): s
                                                         for r, s in enumerate(shares)}, indent=1), encoding="utf-8")
    for rank, mine in enumerate(shares):
        echo(f"worker {rank} ({decision.accelerators} on {decision.provider} {decision.instance} in "
             f"{decision.region}): {len(mine)} corpora: {', '.join(mine)}")
    echo(f"outputs: {request.bucket}/{delivery_task.OUTPUTS}/{decision.decision_id}/ (the bucket, mounted on every "
         "worker)"
         if request.bucket else "outputs: no --bucket, so they would stay on each worker's machine: a launch needs one")
    done = Delivering(task_file, shares)
    if request.dry_run:
        return done
    return _launch(request, config, secrets, done, echo)


def _launch(request: DeliveryRequest, config: dict, secrets: dict[str, str], done: Delivering,
            echo: Callable[[str], None]) -> Delivering:
    """Record the fleet run (one entry per worker), then launch the task as one managed job per lot."""
    require("mlflow", "fleet")
    from gpucost_mlflow.tracking import experiments, fleet_run, store  # deferred: imports mlflow

    decision = request.decision
    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment_id = experiments.resolve(client, decision.experiment, create=True).id
    workers = [worker(decision.accelerator, rank) for rank in range(decision.lots)]
    params = {"kind": ROLE, "gpus": ",".join(workers), "clouds": decision.provider or "any",
              "spot": str(request.spot).lower(), "max_hours": f"{decision.forecast_hours:f}",
              "setup_hours": f"{request.setup_hours:f}", "max_cost": f"{request.max_cost:f}",
              "currency": decision.currency, "worst_case": f"{decision.committed}",
              "forecast_hours": f"{decision.forecast_hours:f}", "decision": decision.decision_id,
              "variant": decision.variant, "device": decision.device, "corpora": str(sum(map(len, done.shares))),
              "launched_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "corpora_dir": str(request.corpora), "bucket": request.bucket, "protocol": str(request.protocol),
              "variants_file": str(request.variants), "model": str(request.model),
              "catalogs": ",".join(map(str, request.catalogs)), "spread": f"{decision.spread:g}",
              "deadline": decision.deadline}
    note = (f"Delivery fleet {request.fleet_id}: {decision.variant} on {decision.device}, {decision.lots} worker(s), "
            f"worst case {decision.committed} {decision.currency}. `gpucost fleet status --fleet {request.fleet_id}` "
            "shows each worker's corpora.")
    done.run_id = fleet_run.open_fleet(client, experiment_id, request.fleet_id, workers, params, note)
    each = (decision.committed / decision.lots).quantize(CENT, rounding=ROUND_UP)
    for name, mine in zip(workers, done.shares):
        fleet_run.record(client, done.run_id, name, {
            "accelerators": decision.accelerators, "worst_cost": f"{each}", "share": ",".join(mine),
            "worst_offer": f"{decision.provider} {decision.instance} in {decision.region}"})
    try:
        job_ids = skypilot.launch_ranked(config, secrets, decision.lots)
    except GpucostError:
        raise
    except Exception as exc:  # noqa: BLE001 - SkyPilot's errors (API server, cloud, credentials) are many types
        raise GpucostError(f"SkyPilot could not launch the delivery ({one_line(exc, named=True)}); "
                           f"`gpucost fleet down --fleet {request.fleet_id}` cancels what it did launch") from None
    done.job_ids = job_ids
    for name, job_id in zip(workers, job_ids):
        fleet_run.record(client, done.run_id, name, {"job_id": str(job_id)})
        echo(f"{name}: managed job {job_id} ({delivery_task.name(request.fleet_id)})")
    return done
