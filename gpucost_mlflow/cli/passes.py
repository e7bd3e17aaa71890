"""Running passes: `gpucost pass` and `campaign` (keeping them: `cli/kept.py`)."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from gpucost_mlflow.cli.durations import timing_words
from gpucost_mlflow.cli.options import (
    AUTO_MODEL,
    CORPUS_HELP,
    EXPERIMENT_HELP,
    MODEL_HELP,
    WholeNumber,
    _catalog,
    _corpus,
    _echo_ui_link,
    _experiment,
    _file,
    _model,
    _under,
)
from gpucost_mlflow.cli.report import _build_report
from gpucost_mlflow.core.campaign.settle import STAGE, Member, looks, plan_stage
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.variants import read_declaration
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.stats import per_look
from gpucost_mlflow.core.money.choice import STAGE_OPEN
from gpucost_mlflow.tracking import schema

# The package folder whose git commit a pass records (the folder above this cli/ package).
CODE_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class InputFiles:
    """The files a pass or a campaign reads, as its options name them: each resolved under root when read."""

    corpus_path: str | None
    model_path: Path
    variants_file: Path
    protocol_file: Path
    root: Path = Path(".")


@click.command("pass")
@click.option("--variant", "variant_name", required=True, help="A variant name from the variants file.")
@click.option("--corpus", "corpus_path", type=click.Path(), default=None, help=CORPUS_HELP)
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
              help=MODEL_HELP)
@click.option("--variants", "variants_file", type=click.Path(path_type=Path), default=shipped.VARIANTS,
              show_default=True)
@click.option("--experiment", default=None, help=f"{EXPERIMENT_HELP} Ignored under `mlflow run`.")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True, help="The pre-registered protocol; its digest is locked on the experiment.")
@click.option("--role", default="benchmark", show_default=True,
              help="benchmark, or deliverable for a production corpus.")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."),
              help="Folder that relative paths are resolved from (the MLproject passes the repository root).")
def run_pass(variant_name, corpus_path, model_path, variants_file, experiment, protocol_file, role, root) -> None:
    """Run one pass of a variant over the corpus as one MLflow run."""
    from gpucost_mlflow.flow.launcher import execute  # deferred: imports torch

    request = _pass_request(variant_name, experiment, role,
                            InputFiles(corpus_path, model_path, variants_file, protocol_file, root))
    try:
        result = execute(request)
    except KeyboardInterrupt:
        click.echo("pass interrupted: recorded as a failed attempt (interrupted)", err=True)
        sys.exit(130)
    if result.locked_now:
        click.echo(f"experiment locked to protocol {request.protocol_path} (first pass)", err=True)
    click.echo(f"pass {request.variant.name}: {result.status} ({result.reason}); {_pass_figures(result.metrics)}; "
               f"run {result.run_id}")
    if result.spooled:
        click.echo(f"not yet in the tracking store: kept in {result.spooled}; run `gpucost sync` when it is back",
                   err=True)
    if result.status == Status.FAILED:
        sys.exit(1)


def _pass_request(variant_name: str, experiment: str | None, role: str, files: InputFiles):
    """The launcher's PassRequest from the options of `gpucost pass`, every path resolved under root."""
    from gpucost_mlflow.flow.launcher import PassRequest  # deferred: imports torch

    root = files.root
    declared, protocol_path = read_declaration(_file(files.variants_file, root)), _file(files.protocol_file, root)
    return PassRequest(
        variant=declared.variant(variant_name),
        corpus_path=_corpus(root, files.corpus_path, protocol_path),
        model_path=_model(root, files.model_path, protocol_path),
        experiment=_experiment(experiment),
        protocol_path=protocol_path,
        declared=declared,
        role=role,
        code_root=CODE_ROOT,
    )


def _pass_figures(metrics: dict) -> str:
    """The pass's duration and the quality figures its judge recorded, as the summary line shows them."""
    timing = timing_words(metrics)
    quality = "".join(registry.output(name).figures(metrics) for name in registry.output_names())
    return f"{timing}{quality}"


@click.command("campaign")
@click.option("--variants", "variant_names", default="batch1,batch4,batch8", show_default=True,
              help="Comma-separated variant names, in the first round's order.")
@click.option("--passes", type=WholeNumber(1), default=None,
              help="Passes per variant (default and required value: the protocol's).")
@click.option("--resume", default=None,
              help="Campaign id: run only its slots without an attempt, and its interrupted ones again.")
@click.option("--experiment", default=None, help=f"{EXPERIMENT_HELP} Ignored under `mlflow run`.")
@click.option("--corpus", "corpus_path", type=click.Path(), default=None, help=CORPUS_HELP)
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
              help=MODEL_HELP)
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."),
              help="Folder that relative paths are resolved from.")
@click.option("--series", "series_name", default=None,
              help="Run every variant of this declared series (instead of --variants).")
@click.option("--settle", is_flag=True,
              help="The protocol's pre-registered second stage: more passes of the configurations "
              "the decision over --catalog leaves undecided, each the same, then the decision read once.")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), multiple=True,
              help="The price catalog(s) the campaign's machine time is priced from (its device's cheapest hourly "
                   "row); with --settle, the decision is read over them too, as `gpucost report --catalog`.")
def campaign(variant_names, passes, resume, experiment, corpus_path, model_path, variants_file, protocol_file, root,
             series_name, settle, catalog_file) -> None:
    """Run every variant the protocol's number of times in rotated order, as nested runs under one campaign run."""
    with _starter(protocol_file, root, settle):
        from gpucost_mlflow.cli.progress import CampaignProgress  # deferred: imports torch
        from gpucost_mlflow.flow.campaign import run_campaign  # deferred: imports torch

        plan = _campaign_plan(variant_names, passes, resume, experiment, series_name,
                              InputFiles(corpus_path, model_path, variants_file, protocol_file, root))
        if catalog_file:
            plan.catalog = _catalog(tuple(_under(root, p) for p in catalog_file))
        if settle:
            plan = _second_stage(plan, resume, catalog_file, root)
            if plan is None:
                return
        progress = CampaignProgress()
        try:
            result = run_campaign(plan, progress.display())
        except KeyboardInterrupt:
            progress.close()
            click.echo("campaign interrupted: the current pass is recorded as failed (interrupted); "
                       f"resume with `gpucost campaign --resume {progress.campaign_id}`", err=True)
            sys.exit(130)
        finally:
            progress.close()
        _echo_campaign(result)
        if settle:
            built = _settled_decision(plan, catalog_file, root)
            click.echo(f"decision after the second stage (read once): {built.decision}")


def _starter(protocol_file: Path, root: Path, settle: bool):
    """The campaign's starter under `child_imports: once`, started before the command imports torch and MLflow, so
    its own imports run while they do (a second stage's campaign starts its own, once it has passes to run)."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.execution import forkserver  # no torch: the starter imports it

    once = not settle and load_protocol(_file(protocol_file, root)).child_imports == "once"
    return forkserver.serving() if once else contextlib.nullcontext()


def _campaign_plan(variant_names: str, passes: int | None, resume: str | None, experiment: str | None,
                   series_name: str | None, files: InputFiles):
    """The CampaignPlan from the options of `gpucost campaign`: the variants named or the declared series' members,
    the protocol's passes per variant unless --passes, every path resolved under root."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.flow.campaign import CampaignPlan  # deferred: imports torch

    root = files.root
    protocol_path, declared = _file(files.protocol_file, root), read_declaration(_file(files.variants_file, root))
    names = [name.strip() for name in variant_names.split(",") if name.strip()]
    if series_name is not None:
        names = declared.members(series_name)
    plan = CampaignPlan(
        variants=names,
        passes=passes if passes is not None else load_protocol(protocol_path).passes_per_variant,
        experiment=_experiment(experiment),
        corpus_path=_corpus(root, files.corpus_path, protocol_path),
        model_path=_model(root, files.model_path, protocol_path),
        protocol_path=protocol_path,
        declared=declared,
        code_root=CODE_ROOT,
        resume=resume or "",
    )
    plan.referee = _referee(plan)
    return plan


def _referee(plan):
    """The protocol's race as the campaign asks it after each round (core/campaign/race.py): the experiment's attempts
    read again, every configuration assessed over the plan's catalog (none given: only the quality and deadline
    stops), this campaign's the runners; None when the protocol declares no race."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

    protocol = load_protocol(plan.protocol_path)
    if protocol.race_from_round is None:
        return None

    def referee(look):
        from gpucost_mlflow.report.race import stops_after  # deferred: imports pandas
        from gpucost_mlflow.tracking import experiments, reader, store  # deferred: imports mlflow

        client = store.client()
        found = reader.attempts(client, experiments.named(client, look.experiment))
        return stops_after(found, protocol, plan.catalog, look.round, look.campaign_id)

    return referee


def _device_here() -> str:
    """The device a pass started here runs on, as its manifest names it (the GPU torch sees, else the CPU)."""
    from gpucost_mlflow.execution.devices import device_names  # deferred: imports torch
    from gpucost_mlflow.execution.models import resolve_device  # deferred: imports torch

    return device_names(resolve_device("auto"))[0]


def _second_stage(plan, resume: str | None, catalog_file: tuple[Path, ...], root: Path):
    """The campaign plan of the protocol's second stage on this machine: the undecided configurations of the device
    it runs on, each brought to the stage's passes; one line per other device of the group with the command that
    settles there (None, said in one line, when nothing runs here). A stage another device already began is joined,
    never planned again."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.report.commands import command  # deferred: the report's layer
    from gpucost_mlflow.report.stage import progress  # deferred: imports pandas

    plan.stage, plan.tags = STAGE, {**plan.tags, schema.STAGE: STAGE}
    plan.referee = None  # the race is the first campaign's; a second stage runs the passes it fixed
    if resume:
        plan.passes = 0  # read back from the campaign run being resumed
        return plan
    protocol = load_protocol(plan.protocol_path)
    catalogs = tuple(_under(root, p) for p in catalog_file)
    built, _, _, _ = _build_report(plan.experiment, plan.protocol_path, catalogs, plan.declared, what_if=False)
    if built.choice.none == STAGE_OPEN and built.stage is not None:
        stage_plan = built.stage
        click.echo(f"second stage in progress: {stage_plan.target} passes per configuration on "
                   f"{', '.join(s.device for s in stage_plan.shares)}; this machine runs its share")
    else:
        undecided = built.choice.undecided
        if not undecided:
            click.echo(f"nothing to settle: {built.decision}")
            return None
        members = [Member(a.configuration.device, a.configuration.variant, a.configuration.separated_on,
                          a.configuration.too_short) for a in undecided]
        stage, stage_plan = plan_stage(members, protocol.settle_max_passes,
                                       per_look(protocol.confidence, looks(protocol.settle_max_passes)))
        click.echo(stage.line())
        if stage_plan is None:
            return None
    here = _device_here()
    settles = command("campaign --settle", plan.experiment, plan.protocol_path, plan.declared.path,
                      _catalog(catalogs))
    for other in stage_plan.shares:
        if other.device != here:
            click.echo(f"on {other.device}: `{settles}` on a machine with it runs {', '.join(other.variants)} "
                       f"there ({other.more} more pass(es) each), or `gpucost fleet launch --settle` on every device")
    share = stage_plan.share(here)
    found = progress(built.assessments)
    more = (stage_plan.target - max((found[(here, v)].counted for v in share.variants if (here, v) in found),
                                    default=0)) if share else 0
    if more <= 0:
        click.echo(f"nothing of the stage runs on this machine ({here}): " +
                   ("its share has run" if share else "no undecided configuration ran on it"))
        return None
    plan.variants, plan.passes = list(share.variants), more
    plan.tags[schema.SETTLE_PLAN] = stage_plan.tag()
    return plan


def _settled_decision(plan, catalog_file: tuple[Path, ...], root: Path):
    """The decision over the catalog once the second stage has run: read once, here, never round by round."""

    built, _, _, _ = _build_report(plan.experiment, plan.protocol_path, tuple(_under(root, p) for p in catalog_file),
                                   plan.declared, what_if=False)
    return built


def _echo_campaign(result) -> None:
    """The campaign's summary: attempts per status, passes judged again, variants not tried, harness overhead, its
    machine time (and its price, given a catalog), link."""
    statuses = [outcome.status for _, outcome in result.results]
    summary = ", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses))) or "nothing left to run"
    click.echo(f"campaign {result.campaign_id} (parent run {result.parent_run_id}): {summary}")
    for judged in result.rejudged:
        click.echo(f"re-judged {judged.variant} run {judged.run_id}: pending -> {judged.status} (reference run "
                   f"{judged.reference_run})")
    for name, why in result.skipped.items():
        click.echo(f"not tried: {name} ({why})")
    if result.overhead_s_per_pass is not None:
        click.echo(f"harness overhead: {result.overhead_s_per_pass:.2f} s per pass outside the timed parts")
    if result.measuring is not None:
        price = f"; {result.measuring_price.words}" if result.measuring_price is not None else ""
        click.echo(f"{result.measuring.line()}{price}")
    _echo_ui_link(result.experiment_id)


COMMANDS = (run_pass, campaign)
