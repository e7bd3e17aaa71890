"""`gpucost fleet launch`: check the fleet, price its worst case, write one SkyPilot task per GPU type, then (unless a
dry run) record the fleet run and launch each task as a managed job. Nothing is launched when any check fails; a dry
run writes the tasks only when the fleet would be launched."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import yaml

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.fleet import budget, tracking_uri
from gpucost_mlflow.core.fleet.jobs import Job
from gpucost_mlflow.core.fleet.task import (
    Campaign,
    Inputs,
    Machine,
    endpoint_keys,
    server_extras,
    task_config,
    user_code,
)
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.money.market import Interruptions
from gpucost_mlflow.fleet import skypilot, wheel
from gpucost_mlflow.market import require


@dataclass
class FleetRequest:
    """Everything `gpucost fleet launch` was given, checked by `launch`."""

    fleet_id: str
    jobs: list[Job]
    clouds: list[str]
    spot: bool
    interruptions: Interruptions | None
    max_hours: Decimal
    setup_hours: Decimal
    max_cost: Decimal
    campaign: Campaign
    corpus: Path
    model: Path
    protocol: Path
    variants: Path
    out: Path
    torch_version: str
    wheel: Path | None = None
    dry_run: bool = False
    environ: dict[str, str] = field(default_factory=dict)
    campaigns: dict[str, Campaign] = field(default_factory=dict)  # a job's own campaign (a second stage's share)
    design: budget.Design | None = None  # each job's campaign, for the worst case with the protocol's race

    def campaign_of(self, job: Job) -> Campaign:
        """The campaign this job runs: its own, else the fleet's."""
        return self.campaigns.get(job.gpu, self.campaign)


@dataclass
class Launched:
    """The fleet: its worst case per job, the task files written, the job ids (empty on a dry run)."""

    worsts: list[budget.Worst]
    files: dict[str, Path]
    raced: list[budget.Raced] = field(default_factory=list)  # the worst case with the race, where it declares one
    job_ids: dict[str, int] = field(default_factory=dict)
    run_id: str = ""


def price(request: FleetRequest) -> list[budget.Worst]:
    """Each job's worst case from SkyPilot's catalog; refused above --max-cost."""
    where = ", ".join(request.clouds) or "every cloud cached here"
    offers = skypilot.offers(request.clouds, [job.gpu for job in request.jobs])
    worsts = [budget.worst_case(job, offers, max_hours=request.max_hours, setup_hours=request.setup_hours,
                                spot=request.spot, interruptions=request.interruptions, clouds=where)
              for job in request.jobs]
    budget.check(worsts, request.max_cost)
    return worsts


def check_reachable(environ: dict[str, str]) -> None:
    """Refuse, in one line, a tracking store the fleet's machines could not reach."""
    why = tracking_uri.unreachable(environ.get("MLFLOW_TRACKING_URI", ""))
    if why:
        raise GpucostError(f"the fleet's machines could not reach the tracking store: {why}; set "
                           "MLFLOW_TRACKING_URI to a server they can reach (docs/fleet.md); nothing launched")


def launch(request: FleetRequest, echo: Callable[[str], None] = print) -> Launched:
    """Check, price, write and (unless a dry run) launch the fleet."""
    if not request.dry_run:
        check_reachable(request.environ)
    worsts = price(request)
    raced = [r for w in worsts if request.design and (r := budget.with_race(w, request.design)) is not None]
    for worst in worsts:
        echo(worst.line())
        for r in raced:
            if r.worst is worst:
                echo(r.line())
    echo(f"fleet worst case: {budget.total(worsts)} {budget.CURRENCY} of --max-cost {request.max_cost} "
         f"{budget.CURRENCY}")
    if raced:
        echo(budget.totals_line(worsts, raced))
    built = wheel.given(request.wheel) if request.wheel else wheel.build(request.out / "wheel")
    variants = load_variants(request.variants)
    inputs = Inputs(built, request.corpus, request.model, request.protocol, request.variants,
                    user_code(variants, request.variants))
    inputs.check()
    secrets = {**tracking_uri.secrets(request.environ), **endpoint_keys(variants, request.environ)}
    machine = Machine(tuple(request.clouds), request.spot, request.torch_version, request.setup_hours,
                      request.max_hours, server_extras(variants))
    configs = {job.gpu: task_config(request.fleet_id, job, machine=machine, inputs=inputs,
                                    campaign=request.campaign_of(job), secret_names=sorted(secrets))
               for job in request.jobs}
    for config in configs.values():
        skypilot.task(config)  # SkyPilot itself accepts it (secrets named, their values given only at launch)
    request.out.mkdir(parents=True, exist_ok=True)
    files = {}
    for job in request.jobs:
        files[job.gpu] = request.out / f"{job.name(request.fleet_id)}.yaml"
        files[job.gpu].write_text(yaml.dump(configs[job.gpu], Dumper=_TaskDumper, sort_keys=False), encoding="utf-8")
    done = Launched(worsts, files, raced)
    if request.dry_run:
        return done
    return _launch(request, configs, secrets, done, inputs, echo)


def _launch(request: FleetRequest, configs: dict[str, dict], secrets: dict[str, str], done: Launched, inputs: Inputs,
            echo: Callable[[str], None]) -> Launched:
    """Record the fleet run, then launch each job and record its id as it comes."""
    require("mlflow", "fleet")  # a venv with SkyPilot alone (.venv-market) prices and writes, but records no run
    from gpucost_mlflow.tracking import experiments, fleet_run, store  # deferred: imports mlflow

    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment_id = experiments.resolve(client, request.campaign.experiment, create=True).id
    params = {"gpus": ",".join(job.gpu for job in request.jobs), "clouds": ",".join(request.clouds) or "any",
              "spot": str(request.spot).lower(), "max_hours": f"{request.max_hours:f}",
              "setup_hours": f"{request.setup_hours:f}", "max_cost": f"{request.max_cost:f}",
              "currency": budget.CURRENCY, "worst_case": f"{budget.total(done.worsts)}",
              "campaign": " ".join(request.campaign.args()), "wheel": inputs.wheel.name,
              "launched_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    if done.raced:
        params["worst_case_with_race"] = f"{budget.raced_total(done.worsts, done.raced)}"
    if request.spot and request.interruptions:
        params["interruptions"] = f"{request.interruptions.per_day:f} a day ({request.interruptions.source})"
    note = (f"Fleet {request.fleet_id}: one campaign per GPU type ({params['gpus']}), worst case "
            f"{params['worst_case']} {budget.CURRENCY}. `gpucost fleet status --fleet {request.fleet_id}` shows its "
            "jobs; filter the passes with tags.`gpucost.fleet.id` = '" + request.fleet_id + "'.")
    done.run_id = fleet_run.open_fleet(client, experiment_id, request.fleet_id, [j.gpu for j in request.jobs], params,
                                       note)
    for worst in done.worsts:
        fleet_run.record(client, done.run_id, worst.job.gpu, {
            "accelerators": worst.job.accelerators, "worst_cost": f"{worst.cost}",
            "worst_offer": f"{worst.offer.provider} {worst.offer.instance} in {worst.offer.region} at {worst.price}/h"})
    for job in request.jobs:
        try:
            job_id = skypilot.launch(configs[job.gpu], secrets)
        except GpucostError:
            raise
        except Exception as exc:  # noqa: BLE001 - SkyPilot's errors (API server, cloud, credentials) are many types
            launched = ", ".join(f"{gpu} job {i}" for gpu, i in done.job_ids.items()) or "none"
            raise GpucostError(f"SkyPilot could not launch {job.accelerators} ({one_line(exc, named=True)}); launched "
                               f"before it: {launched} (`gpucost fleet down --fleet {request.fleet_id}` cancels them)"
                               ) from None
        done.job_ids[job.gpu] = job_id
        fleet_run.record(client, done.run_id, job.gpu, {"job_id": str(job_id)})
        echo(f"{job.accelerators}: managed job {job_id} ({job.name(request.fleet_id)})")
    return done


class _TaskDumper(yaml.SafeDumper):
    """YAML as a person writes a SkyPilot task: the setup and run scripts as literal blocks."""


_TaskDumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))
