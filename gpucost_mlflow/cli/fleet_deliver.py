"""`gpucost fleet deliver` and its worker: the experiment's decision delivered on the lots its plan rents, one
SkyPilot managed job per lot, each delivering its share of the corpora with the decided configuration (docs/fleet.md,
"Deliver")."""

from __future__ import annotations

import datetime as dt
import os
import shlex
import sys
from decimal import Decimal
from pathlib import Path

import click

from gpucost_mlflow.cli.options import AUTO_MODEL, EXPERIMENT_HELP, MODEL_HELP, _experiment, _file, _model, _under
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import delivery
from gpucost_mlflow.core.fleet.jobs import new_fleet_id
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.variants import read_declaration
from gpucost_mlflow.core.money import market
from gpucost_mlflow.core.money.plans import parse_positive


def confirm_command(experiment: str, protocol: Path, variants: Path, catalogs: tuple[Path, ...]) -> str:
    """The exact `gpucost confirm` command for this decision."""
    parts = ["gpucost confirm --experiment", shlex.quote(experiment), "--protocol", shlex.quote(str(protocol)),
             "--variants-file", shlex.quote(str(variants))]
    return " ".join(parts + [f"--catalog {shlex.quote(str(path))}" for path in catalogs])


def read_decision(experiment: str, protocol_path: Path, variants_path: Path, catalogs: tuple[Path, ...]
                  ) -> delivery.Decision:
    """The experiment's decision as the report reads it, refused in one line when there is nothing to deliver: no
    decision (or none logged), an undecided one, or a chosen configuration not confirmed."""
    from gpucost_mlflow.cli.report import _build_report  # deferred: imports mlflow
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.core.measurement.confirmation import NOT_CONFIRMED  # deferred: imports numpy
    from gpucost_mlflow.tracking import decision_run, experiments  # deferred: imports mlflow

    declared = read_declaration(variants_path)
    built, _, client, _ = _build_report(experiment, protocol_path, catalogs, declared, what_if=False)
    choice = built.choice
    if choice.decided:
        verdict = built.confirmations[choice.chosen[0].configuration.name].verdict
    else:
        verdict = NOT_CONFIRMED if choice.unconfirmed else None
    delivery.refuse(built.decision, choice.none, verdict, confirm_command(experiment, protocol_path, variants_path,
                                                                          catalogs))
    logged = decision_run.latest_decision(client, experiments.named(client, experiment).id)
    if logged is None:
        raise GpucostError(f"no decision run in experiment '{experiment}': `gpucost report` logs the decision a "
                           "delivery serves; nothing launched")
    chosen = choice.chosen[0]  # of a tie, the one `choice.to_run` puts first
    plan, device = chosen.plan, chosen.configuration.device
    table = market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES)])
    accelerator = market.accelerator_for(table, device)
    if accelerator is None or not plan.offer.hourly:
        raise GpucostError(f"{device} ({plan.describe()}) is not an hourly offer SkyPilot names: rent it by hand and "
                           "run `gpucost deliver` there; nothing launched")
    protocol = load_protocol(protocol_path).at(dt.datetime.now(dt.timezone.utc))
    return delivery.Decision(
        experiment=experiment, variant=chosen.configuration.variant, device=device, accelerator=accelerator,
        gpus_per_lot=plan.offer.gpus_per_lot, lots=plan.lots, provider=plan.offer.provider, region=plan.offer.region,
        instance=plan.offer.instance, committed=chosen.committed, currency=chosen.currency,
        forecast_hours=Decimal(plan.window_hours), plan=plan.describe(), decision_id=logged.info.run_id,
        spread=protocol.max_spread_ratio,
        deadline=protocol.deadline.isoformat(timespec="minutes") if protocol.deadline else "")


@click.command("deliver")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--corpora", "corpora_dir", type=click.Path(path_type=Path), required=True,
              help="A folder of corpus files (*.jsonl), shared among the workers in name order.")
@click.option("--max-cost", required=True, help="The delivery's budget, in the plan's currency: a worst case above it "
              "is refused.")
@click.option("--spot", is_flag=True, help="Spot machines; SkyPilot relaunches a preempted worker, which resumes.")
@click.option("--bucket", default="", help="A bucket (s3://, gs://, ...) holding the corpora, mounted on each worker "
              "in place of the local folder.")
@click.option("--dry-run", is_flag=True, help="Price the delivery and write its SkyPilot task; launch nothing.")
@click.option("--only", default="", help="Comma-separated corpus names of the folder to deliver (the ones `fleet "
              "status` found missing); default every one.")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), multiple=True,
              help="The price catalog(s) the decision is read over, as `gpucost report --catalog`.")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True)
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
              help=MODEL_HELP)
@click.option("--setup-hours", default="0.5", show_default=True, help="Each worker's setup limit, in hours.")
@click.option("--wheel", type=click.Path(path_type=Path), default=None,
              help="The gpucost wheel the machines install (default: built from this checkout).")
@click.option("--torch", "torch_version", default=None, help="The torch version the machines install.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the task, the shares and the wheel are written (default: fleets/<fleet id>).")
def deliver_cmd(experiment, corpora_dir, max_cost, spot, bucket, dry_run, only, catalog_file, protocol_file,
                variants_file,
                model_path, setup_hours, wheel, torch_version, out) -> None:
    """Deliver the experiment's confirmed decision on the lots its plan rents: one SkyPilot managed job per lot, each
    delivering its share of the corpora with the decided configuration; the worst case is printed first."""
    from gpucost_mlflow.cli.fleet import _torch_version  # deferred: cli/fleet.py imports this module
    from gpucost_mlflow.fleet.deliver import DeliveryRequest  # deferred: imports SkyPilot's layer
    from gpucost_mlflow.fleet.deliver import deliver as delivering  # deferred: imports SkyPilot's layer

    root = Path(".")
    name = _experiment(experiment)
    protocol_path, variants_path = _file(protocol_file, root), _file(variants_file, root)
    corpora = _under(root, corpora_dir)
    if not corpora.is_dir():
        raise GpucostError(f"{corpora}: not a folder of corpora; nothing launched")
    limit = parse_positive(max_cost, "--max-cost", "an amount")
    catalogs = tuple(_under(root, p) for p in catalog_file)
    decision = read_decision(name, protocol_path, variants_path, catalogs)
    fleet_id = new_fleet_id()
    request = DeliveryRequest(
        fleet_id=fleet_id, decision=decision, corpora=corpora.resolve(), max_cost=limit,
        model=_model(root, model_path, protocol_path).resolve(), protocol=protocol_path.resolve(),
        variants=variants_path.resolve(), out=out or Path("fleets") / fleet_id,
        torch_version=_torch_version(torch_version), setup_hours=parse_positive(setup_hours, "--setup-hours"),
        spot=spot, bucket=bucket.rstrip("/"), wheel=wheel, dry_run=dry_run, environ=dict(os.environ),
        only=tuple(n.strip() for n in only.split(",") if n.strip()), catalogs=tuple(p.resolve() for p in catalogs))
    done = delivering(request, click.echo)
    click.echo(f"SkyPilot task {done.task} (one managed job per lot, each told its rank)")
    if dry_run:
        click.echo(f"dry run: delivery fleet {fleet_id} priced and its task written; nothing launched")
        return
    click.echo(f"delivery fleet {fleet_id} launched: {len(done.job_ids)} worker(s); `gpucost fleet status --fleet "
               f"{fleet_id}` follows them")


@click.command("worker", hidden=True)
@click.option("--fleet", "fleet_id", required=True)
@click.option("--experiment", required=True)
@click.option("--variant", "variant_name", required=True)
@click.option("--decision", "decision_id", required=True)
@click.option("--gpu", "accelerator", required=True)
@click.option("--rank", type=int, required=True)
@click.option("--workers", type=int, required=True)
@click.option("--corpora", "corpora_dir", type=click.Path(path_type=Path), required=True)
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), required=True)
@click.option("--variants-file", type=click.Path(path_type=Path), required=True)
@click.option("--model", "model_path", type=click.Path(path_type=Path), required=True)
@click.option("--only", default="")
@click.option("--outputs", type=click.Path(path_type=Path), default=None)
def worker_cmd(fleet_id, experiment, variant_name, decision_id, accelerator, rank, workers, corpora_dir, protocol_file,
               variants_file, model_path, only, outputs) -> None:
    """A delivery worker on its machine (the task's `run` calls it): its share by its SkyPilot rank, each corpus
    already delivered for this decision skipped, the rest delivered."""
    from gpucost_mlflow.cli.passes import CODE_ROOT  # deferred: imports the flow
    from gpucost_mlflow.fleet.worker import Share, run_worker  # deferred: imports torch

    root = Path(".")
    protocol_path = _file(protocol_file, root)
    share = Share(fleet_id, experiment, variant_name, decision_id, rank, workers, _under(root, corpora_dir),
                  protocol_path, _file(variants_file, root), _model(root, model_path, protocol_path), accelerator,
                  CODE_ROOT, tuple(n for n in only.split(",") if n), outputs)
    try:
        done = run_worker(share, click.echo)
    except KeyboardInterrupt:
        click.echo("worker stopped at its limit or interrupted: the corpus in progress is recorded interrupted",
                   err=True)
        sys.exit(130)
    click.echo(f"worker {rank} of {workers}: {len(done.delivered)} delivered now, {len(done.skipped)} already "
               f"delivered, {len(done.failed)} failed")
    if done.retry:
        click.echo(f"a corpus failed its first try: exit {delivery.RETRY_EXIT}, SkyPilot starts this worker again for "
                   "its one retry", err=True)
        sys.exit(delivery.RETRY_EXIT)
    if done.failed:
        sys.exit(1)
