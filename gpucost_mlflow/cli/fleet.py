"""`gpucost fleet`: one campaign per GPU type on machines SkyPilot rents, into one tracking server (docs/fleet.md)."""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from pathlib import Path

import click

from gpucost_mlflow.cli.fleet_deliver import deliver_cmd, worker_cmd
from gpucost_mlflow.cli.fleet_plan import plan_cmd
from gpucost_mlflow.cli.options import (
    AUTO_MODEL,
    CORPUS_HELP,
    EXPERIMENT_HELP,
    MODEL_HELP,
    WholeNumber,
    _corpus,
    _experiment,
    _file,
    _model,
    _under,
)
from gpucost_mlflow.cli.passes import InputFiles, _campaign_plan, _echo_campaign
from gpucost_mlflow.core.campaign.settle import STAGE, Member, StagePlan, looks, plan_stage
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet.budget import Design
from gpucost_mlflow.core.fleet.jobs import Job, new_fleet_id, parse_gpus
from gpucost_mlflow.core.fleet.task import Campaign
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.variants import read_declaration
from gpucost_mlflow.core.measurement.stats import per_look
from gpucost_mlflow.core.money import market
from gpucost_mlflow.core.money.choice import STAGE_OPEN
from gpucost_mlflow.core.money.market import Interruptions
from gpucost_mlflow.core.money.plans import parse_positive
from gpucost_mlflow.fleet.launch import FleetRequest, launch
from gpucost_mlflow.tracking import schema


@click.group("fleet")
def fleet_group() -> None:
    """Launch one campaign per GPU type through SkyPilot, follow it, cancel it."""


def _campaign_options(command):
    options = [
        click.option("--variants", "variant_names", default="batch1,batch4,batch8", show_default=True,
                     help="Comma-separated variant names, in the first round's order."),
        click.option("--series", "series_name", default=None, help="Run every variant of this declared series."),
        click.option("--passes", type=WholeNumber(1), default=None, help="Passes per variant (the protocol's)."),
        click.option("--experiment", default=None, help=EXPERIMENT_HELP),
        click.option("--corpus", "corpus_path", type=click.Path(), default=None, help=CORPUS_HELP),
        click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
                     help=MODEL_HELP),
        click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True),
        click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
                     show_default=True),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _torch_version(given: str | None) -> str:
    """The torch version the machines install: --torch, else this venv's (without a local build tag like +cpu)."""
    if given:
        return given
    from importlib import metadata

    try:
        return metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        raise GpucostError("no torch here to match: pass --torch VERSION for the machines to install") from None


@fleet_group.command("launch")
@click.option("--gpus", default=None, help="GPU types, one campaign each, as SkyPilot names them: L4,A10G,A100 "
              "(with --settle: the undecided group's devices, not named).")
@click.option("--settle", is_flag=True, help="The protocol's second stage on every device of the undecided group: one "
              "job per device, each running its own undecided configurations (docs/fleet.md).")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), multiple=True,
              help="With --settle: the price catalog(s) the decision is read over, as `gpucost report --catalog`.")
@click.option("--clouds", default="", help="Clouds SkyPilot may choose from (default: any it is set up for).")
@click.option("--spot", is_flag=True, help="Spot machines; SkyPilot relaunches a preempted job, which resumes.")
@click.option("--interruptions-per-day", default=None, help="With --spot: interruptions you expect per day.")
@click.option("--interruptions-source", default="your assumption", show_default=True,
              help="With --spot: where that expectation comes from.")
@click.option("--max-hours", required=True, help="Each job's campaign limit, in hours (it is stopped there).")
@click.option("--setup-hours", default="0.5", show_default=True, help="Each job's setup limit, in hours.")
@click.option("--max-cost", required=True, help="The whole fleet's budget, in USD: a worst case above it is refused.")
@click.option("--wheel", type=click.Path(path_type=Path), default=None,
              help="The gpucost wheel the machines install (default: built from this checkout).")
@click.option("--torch", "torch_version", default=None,
              help="The torch version the machines install (default: this one's).")
@click.option("--dry-run", is_flag=True, help="Price the fleet and write its SkyPilot tasks; launch nothing.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the tasks and the wheel are written (default: fleets/<fleet id>).")
@_campaign_options
def launch_cmd(gpus, settle, catalog_file, clouds, spot, interruptions_per_day, interruptions_source, max_hours,
               setup_hours, max_cost, wheel, torch_version, dry_run, out, variant_names, series_name, passes,
               experiment,
               corpus_path, model_path, variants_file, protocol_file) -> None:
    """Launch one managed SkyPilot job per GPU type, each running the same campaign into one tracking server; with
    --settle, one job per device of the undecided group, each running its own share of the second stage."""

    root = Path(".")
    protocol_path, variants_path = _file(protocol_file, root), _file(variants_file, root)
    declared = read_declaration(variants_path)
    if series_name:
        names = declared.members(series_name)
    else:
        names = [name.strip() for name in variant_names.split(",") if name.strip()]
    if catalog_file and not settle:
        raise GpucostError("--catalog goes with --settle (a fleet itself prices nothing but its worst case)")
    own: dict[str, Campaign] = {}
    if settle:
        if gpus:
            raise GpucostError("--settle launches on the undecided group's devices: leave --gpus out")
        jobs, own = _settle_jobs(_experiment(experiment), protocol_path, declared,
                                 tuple(_under(root, path) for path in catalog_file))
        names = [name for campaign in own.values() for name in campaign.variants.split(",")]
    elif not gpus:
        raise GpucostError("--gpus names the GPU types to launch on (or --settle, the undecided group's)")
    lanes = max(declared.variant(name).settings.lanes for name in names)
    if spot and interruptions_per_day is None:
        raise GpucostError("--spot needs --interruptions-per-day (your expectation for these offers): without it a "
                           "spot fleet's worst case cannot be priced; nothing launched")
    if interruptions_per_day is not None and not spot:
        raise GpucostError("--interruptions-per-day is for --spot fleets only")
    fleet_id = new_fleet_id()
    request = FleetRequest(
        fleet_id=fleet_id,
        jobs=jobs if settle else parse_gpus(gpus, lanes),
        clouds=[c.strip().lower() for c in clouds.split(",") if c.strip()],
        spot=spot,
        interruptions=Interruptions(parse_positive(interruptions_per_day, "--interruptions-per-day"), Decimal(0),
                                    interruptions_source) if spot else None,
        max_hours=parse_positive(max_hours, "--max-hours"),
        setup_hours=parse_positive(setup_hours, "--setup-hours"),
        max_cost=parse_positive(max_cost, "--max-cost", "an amount"),
        campaign=Campaign(_experiment(experiment), "" if series_name else ",".join(names), series_name or "", passes),
        corpus=_corpus(root, corpus_path, protocol_path).resolve(),
        model=_model(root, model_path, protocol_path).resolve(),
        protocol=protocol_path.resolve(),
        variants=variants_path.resolve(),
        out=out or Path("fleets") / fleet_id,
        torch_version=_torch_version(torch_version),
        wheel=wheel,
        dry_run=dry_run,
        environ=dict(os.environ),
        campaigns=own,
        design=None if settle else _design(protocol_path, len(names), passes),
    )
    done = launch(request, click.echo)
    for gpu, path in done.files.items():
        click.echo(f"{gpu}: SkyPilot task {path}")
    if dry_run:
        click.echo(f"dry run: fleet {fleet_id} priced and its tasks written; nothing launched")
        return
    click.echo(f"fleet {fleet_id} launched: {len(done.job_ids)} job(s); `gpucost fleet status --fleet {fleet_id}` "
               "follows them, `gpucost fleet down` cancels them")


def _design(protocol_path: Path, configs: int, passes: int | None) -> Design:
    """Each job's campaign as the protocol runs it: its configurations, passes each and the race's first look (None
    without a race), for the worst case with the race beside the one without."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

    protocol = load_protocol(protocol_path)
    return Design(configs, passes or protocol.passes_per_variant, protocol.race_from_round)


def _settle_jobs(experiment: str, protocol_path: Path, declared, catalogs: tuple[Path, ...]
                 ) -> tuple[list[Job], dict[str, Campaign]]:
    """The second stage over the catalogs' decision as one job per device of the undecided group (its SkyPilot
    accelerator name from the device-names table, its lanes' GPU count) and each job's campaign: its own variants,
    the passes that bring them to the stage's count, the stage's plan on every pass."""
    from gpucost_mlflow.cli.report import _build_report  # deferred: imports mlflow
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

    built, _, _, _ = _build_report(experiment, protocol_path, catalogs, declared, what_if=False)
    if built.choice.none == STAGE_OPEN:
        raise GpucostError(f"a second stage is already under way: {built.decision.removeprefix('No decision: ')} "
                           "(`gpucost fleet status` follows its jobs); nothing launched")
    undecided = built.choice.undecided
    if not undecided:
        raise GpucostError(f"nothing to settle: {built.decision}; nothing launched")
    protocol = load_protocol(protocol_path)
    stage, plan = plan_stage([Member(a.configuration.device, a.configuration.variant, a.configuration.separated_on,
                                     a.configuration.too_short)
                              for a in undecided], protocol.settle_max_passes,
                             per_look(protocol.confidence, looks(protocol.settle_max_passes)))
    if plan is None:
        raise GpucostError(f"{stage.line()}; nothing launched")
    click.echo(stage.line())
    table = market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES)])
    jobs, own = [], {}
    for share in plan.shares:
        if share.more <= 0:
            continue
        gpu = market.accelerator_for(table, share.device)
        if gpu is None:
            raise GpucostError(f"{share.device} has no SkyPilot accelerator name in the device-names table "
                               f"({shipped.DEVICE_NAMES}): its share cannot be launched; run it there with "
                               "`gpucost campaign --settle`; nothing launched")
        lanes = max(declared.variant(name).settings.lanes for name in share.variants)
        jobs.append(Job(gpu, lanes))
        own[gpu] = Campaign(experiment, ",".join(share.variants), "", share.more, plan.tag())
        click.echo(f"{share.device} ({gpu}): {', '.join(share.variants)}, {share.more} more pass(es) each")
    return jobs, own


fleet_group.add_command(plan_cmd)
fleet_group.add_command(deliver_cmd)
fleet_group.add_command(worker_cmd)


@fleet_group.command("status")
@click.option("--fleet", "fleet_id", required=True, help="The fleet id `gpucost fleet launch` printed.")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--corpora", "corpora_dir", type=click.Path(path_type=Path), default=None,
              help="A delivery fleet: the folder of its corpora, for the completeness check (default: the one it was "
              "launched with).")
def status_cmd(fleet_id, experiment, corpora_dir) -> None:
    """Each job's SkyPilot state beside its campaign (passes done, accepted, pending, failed, left) or, for a delivery
    fleet, its corpora (done, running, failed); time and cost; a delivery's finish time and completeness."""
    from gpucost_mlflow.fleet.delivery_status import delivery_status  # deferred: imports mlflow

    found = delivery_status(_experiment(experiment), fleet_id, corpora_dir)
    for job in found.jobs:
        click.echo(job.line())
    for line in found.lines:
        click.echo(line)


@fleet_group.command("down")
@click.option("--fleet", "fleet_id", required=True, help="The fleet id `gpucost fleet launch` printed.")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
def down_cmd(fleet_id, experiment) -> None:
    """Cancel every job of the fleet (their passes so far stay in the tracking store)."""
    from gpucost_mlflow.fleet.status import fleet_down  # deferred: imports mlflow

    cancelled = fleet_down(_experiment(experiment), fleet_id)
    for gpu, job_id in cancelled:
        click.echo(f"{gpu}: managed job {job_id} cancelled")
    if not cancelled:
        click.echo(f"fleet {fleet_id} has no launched job to cancel")


@fleet_group.command("job", hidden=True)
@click.option("--fleet", "fleet_id", required=True)
@click.option("--gpu", required=True)
@click.option("--settle-plan", default="", help="A second stage's plan (its passes carry it).")
@_campaign_options
def job_cmd(fleet_id, gpu, settle_plan, variant_names, series_name, passes, experiment, corpus_path, model_path,
            variants_file, protocol_file) -> None:
    """A fleet job's campaign on its machine (the task's `run` calls it): started, or resumed after a relaunch."""
    from gpucost_mlflow.cli.progress import CampaignProgress  # deferred: imports torch
    from gpucost_mlflow.fleet.job import run_job  # deferred: imports torch

    plan = _campaign_plan(variant_names, passes, None, experiment, series_name,
                          InputFiles(corpus_path, model_path, variants_file, protocol_file, Path(".")))
    if settle_plan:
        plan.stage = STAGE
        plan.tags = {**plan.tags, schema.STAGE: STAGE, schema.SETTLE_PLAN: StagePlan.from_record(settle_plan).tag()}
    progress = CampaignProgress()
    try:
        done = run_job(fleet_id, gpu, plan, progress.display())
    except KeyboardInterrupt:
        progress.close()
        click.echo("fleet job stopped at its limit or interrupted: the current pass is recorded as failed "
                   "(interrupted)", err=True)
        sys.exit(130)
    finally:
        progress.close()
    for run_id in done.published:
        click.echo(f"pass run {run_id} was finished by the lost machine and waited in its spool: published, it counts")
    for run_id in done.interrupted:
        click.echo(f"pass run {run_id} was left running by the lost machine: recorded interrupted, its slot runs again")
    if done.result is None:
        click.echo(f"campaign {done.campaign_id} of fleet {fleet_id} on {gpu} has already finished: nothing to run")
        return
    _echo_campaign(done.result)


COMMANDS = (fleet_group,)
