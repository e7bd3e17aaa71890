"""What the experiment shows: `gpucost report` (the decision) and `attempts` (the raw table)."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import (
    EXPERIMENT_HELP,
    _catalog,
    _echo_rejudged,
    _echo_ui_link,
    _experiment,
    _file,
    _under,
)
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.inputs.protocol_diff import against_lock
from gpucost_mlflow.core.inputs.variants import Declaration, read_declaration


@click.command("report")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Folder for the files (default: reports/<experiment>).")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), multiple=True,
              help="A price catalog (default: the shipped lab kit); repeat it to read several as one (one currency).")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True,
              help="The protocol locked on the experiment; another one is refused, naming the fields that differ.")
@click.option("--what-if-protocol", "what_if_file", type=click.Path(path_type=Path), default=None,
              help="Decide under this protocol although it is not the locked one: the title, the decision note and the "
                   "decision run's name then say 'what-if protocol'. Instead of --protocol.")
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
@click.option("--no-log", is_flag=True, help="Write the files only; do not log them as a decision run.")
@click.option("--allow-stale-prices", is_flag=True,
              help="Price catalog rows older than the protocol's max_price_age_days anyway (the report says so).")
@click.pass_context
def report(ctx, experiment, out_dir, catalog_file, protocol_file, what_if_file, variants_file, root, no_log,
           allow_stale_prices) -> None:
    """The decision report: report.md, report.html, attempts.csv, balance.csv, logged as a decision run; pending
    passes whose reference now exists are judged first."""
    from click.core import ParameterSource

    from gpucost_mlflow.report.build import write  # deferred: imports matplotlib
    from gpucost_mlflow.report.decided import decided  # deferred: imports pandas
    from gpucost_mlflow.tracking import decision_run, ui  # deferred: imports mlflow

    if what_if_file is not None and ctx.get_parameter_source("protocol_file") is not ParameterSource.DEFAULT:
        raise GpucostError("pass --protocol or --what-if-protocol, not both: a what-if report decides under the "
                           "what-if protocol alone")
    name = _experiment(experiment)
    protocol_path = _under(root, what_if_file) if what_if_file is not None else _file(protocol_file, root)
    catalog_path = tuple(_under(root, path) for path in catalog_file)
    default = what_if_file is None and ctx.get_parameter_source("protocol_file") is ParameterSource.DEFAULT
    built, balance, client, evidence = _build_report(name, protocol_path, catalog_path,
                                                     read_declaration(_file(variants_file, root)),
                                                     what_if=what_if_file is not None, allow_stale=allow_stale_prices,
                                                     default_protocol=default)
    for line in built.warnings:
        click.echo(f"Warning: {line}", err=True)
    paths = write(built, balance, _under(root, out_dir or Path("reports") / name))
    click.echo(built.decision)
    if not no_log:
        run_id = decision_run.log_decision(client, evidence.experiment.id, decided(built, paths, evidence.campaigns))
        click.echo(f"logged as decision run {run_id} (artifacts: {', '.join(paths)})")
        click.echo(f"Decision run: {ui.run_url(client.tracking_uri, evidence.experiment.id, run_id)}")
    click.echo(f"report: {paths['report.html'].resolve()}")
    _echo_ui_link(evidence.experiment.id)


def _build_report(name: str, protocol_path: Path, catalog_path: tuple[Path, ...], declared: Declaration, what_if: bool,
                  allow_stale: bool = False, default_protocol: bool = False):
    """The report in its three stages' first two: load the protocol, catalog and variants, resolve the experiment
    once and check the protocol against the one locked on it (a what-if one is let through, marked), judge the
    pending passes first, read the evidence once and build the report from it; returns the built report, its
    balance, the client and the evidence."""

    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.report.build import Options, build  # deferred: imports matplotlib
    from gpucost_mlflow.tracking import evidence, experiments, schema, store  # deferred: imports mlflow

    protocol = load_protocol(protocol_path)
    catalog = _catalog(catalog_path)
    store.bound_http_retries()
    client = store.client()
    found = experiments.named(client, name)
    locked = found.tags.get(schema.PROTOCOL_DIGEST, "")
    kept = shipped.locked_protocol(protocol_path, locked) if default_protocol and locked != protocol.digest else None
    if kept is not None:  # locked to a default the project has since changed: read under the file it is locked to
        click.echo(f"protocol: experiment '{name}' is locked to {kept}, the default protocol as shipped before it "
                   f"changed; read under that file (docs/protocol.md, \"The shipped bars\")", err=True)
        protocol_path, protocol = kept, load_protocol(kept)
    changes = against_lock(protocol_path, protocol.digest, protocol_path.read_text(encoding="utf-8"), name,
                           found.tags.get(schema.PROTOCOL_DIGEST, ""), found.tags.get(schema.PROTOCOL_TEXT, ""),
                           what_if=what_if)
    rejudged = _rejudge_first(found, protocol, found.tags if changes else None, client)
    read = evidence.read(client, found)
    built, balance = build(read, protocol, protocol_path, catalog, declared.variants,
                           Options(rejudged=tuple(rejudged), what_if=changes, allow_stale=allow_stale,
                                   variants_path=declared.path))
    return built, balance, client, read


def _rejudge_first(experiment, protocol, locked_tags: dict | None, client) -> list[str]:
    """Judge the pending passes whose reference now exists before the report reads them, under the protocol the
    passes ran under (a what-if report's: the locked one, read back from locked_tags); the lines judged."""
    from gpucost_mlflow.tracking.rejudge import locked_protocol, rejudge  # deferred: imports mlflow

    if locked_tags is not None:
        protocol = locked_protocol(locked_tags)
        if protocol is None:
            click.echo("Warning: pending passes not re-judged: the locked protocol's text is not stored on the "
                       "experiment; run `gpucost rejudge --protocol LOCKED_FILE` first", err=True)
            return []
    lines = _echo_rejudged(rejudge(experiment, protocol, client))
    if lines:
        click.echo(f"report: re-judged {len(lines)} pending pass(es) first (their reference now exists; the same "
                   "judge as `gpucost rejudge`, recorded on the runs)")
    return lines


@click.command("attempts")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "markdown", "json"]), default="table",
              show_default=True)
@click.option("--out", "out_path", type=click.Path(path_type=Path), help="Write to this file instead of the terminal.")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True, help="Compared with the experiment's locked protocol.")
def show_attempts(experiment, fmt, out_path, protocol_file) -> None:
    """The raw attempts table: one row per attempted pass, failed and interrupted ones included."""
    from gpucost_mlflow.tracking import experiments, store  # deferred: imports mlflow
    from gpucost_mlflow.tracking.attempts_table import frame, protocol_warnings, render  # deferred: imports pandas
    from gpucost_mlflow.tracking.reader import attempts  # deferred: imports mlflow

    client = store.client()
    found = experiments.named(client, _experiment(experiment))
    table = frame(attempts(client, found))
    warnings = protocol_warnings(table, found.tags, _file(protocol_file))
    for line in warnings:
        click.echo(f"Warning: {line}", err=True)
    text = render(table, fmt, warnings)
    if out_path is not None:
        write_atomic(out_path, text.encode("utf-8"))
        click.echo(f"{len(table)} attempt(s) written to {out_path}")
    else:
        click.echo(text, nl=not text.endswith("\n"))


COMMANDS = (report, show_attempts)
