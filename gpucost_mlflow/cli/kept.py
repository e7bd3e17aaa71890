"""Keeping passes: `gpucost rejudge`, `exclude` and `sync` (running them: `cli/passes.py`)."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import EXPERIMENT_HELP, _echo_rejudged, _experiment, _file
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.judging.exclusion_reasons import OPERATOR, allowed


@click.command("rejudge")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True, help="The protocol the experiment is locked to.")
def rejudge_cmd(experiment, protocol_file) -> None:
    """Judge every pending pass whose reference now exists (same judge as the pass; raw metrics untouched)."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.tracking import store  # deferred: imports mlflow
    from gpucost_mlflow.tracking.rejudge import rejudge  # deferred: imports mlflow

    protocol = load_protocol(_file(protocol_file))
    store.bound_http_retries()
    store.check()
    judged = _echo_rejudged(rejudge(_experiment(experiment), protocol))
    click.echo(f"{len(judged)} pending pass(es) judged" if judged
               else "nothing to re-judge: no pending pass has its reference yet")


@click.command("exclude")
@click.argument("run_id")
@click.option("--reason", default=None, metavar="REASON",
              help=f"Why, one of: {allowed()} (a flag the pass carries, or operator: another documented external "
                   "cause, named in --note).")
@click.option("--note", default=None, help="What was seen (required with --reason operator, e.g. 'host maintenance "
              "at 10:02'); optional with the other reasons.")
@click.option("--cause", default=None, hidden=True, help="Deprecated: --reason operator --note TEXT.")
@click.option("--undo", is_flag=True, help="Restore the status and reason the pass had before its exclusion.")
def exclude_cmd(run_id, reason, note, cause, undo) -> None:
    """Exclude a pass for a documented external cause (PROTOCOL.md §6): its row stays, status `excluded`.

    The reason is a flag the pass carries, or operator with --note saying what was seen; the report warns when one
    flag was excluded for one variant and kept for another. --undo restores the status the pass had."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.tracking import exclusions, store  # deferred: imports mlflow

    if undo and (reason, note, cause) != (None, None, None):
        raise GpucostError("--undo restores the status the pass had before; it takes no --reason or --note; "
                           "nothing changed")
    if cause is not None:
        if reason is not None or note is not None:
            raise GpucostError("--cause is the deprecated form of --reason operator --note TEXT: give one or the "
                               "other; nothing changed")
        reason, note = OPERATOR, cause
    why = None if undo else exclusions.checked(reason, note)
    if cause is not None:
        click.echo("--cause is deprecated: recorded as --reason operator --note TEXT", err=True)
    store.bound_http_retries()
    store.check()
    client = MlflowClient()
    if why is None:
        done = exclusions.undo(client, run_id)
        click.echo(f"{done.variant} run {done.run_id}: excluded -> {done.status_before} "
                   f"({done.reason_before or 'no reason recorded'}); exclusion by {done.by} at {done.at} undone (cause "
                   f"was: {done.cause})")
        return
    done = exclusions.exclude(client, run_id, why.reason, why.note)
    click.echo(f"{done.variant} run {done.run_id}: {done.status_before or 'no status'} -> excluded for {done.cause} "
               f"(by {done.by} at {done.at}); its row stays in the attempts table, out of durations and medians")
    rule = exclusions.rule(client, done.experiment_id)
    click.echo("exclusion rule of the protocol, to apply alike to every variant: "
               f"{rule or 'not recorded on the experiment'}")


@click.command("sync")
@click.option("--spool", "spool_path", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Spool folder (default: $GPUCOST_SPOOL, else ~/.local/share/gpucost/spool).")
@click.option("--dry-run", is_flag=True, help="List what waits in the spool; upload nothing.")
def sync(spool_path, dry_run) -> None:
    """Upload passes spooled while the tracking store was unreachable; running it again creates no duplicates."""
    import mlflow

    from gpucost_mlflow.tracking import spool  # deferred: imports mlflow

    waiting = spool.entries(spool_path)
    if not waiting:
        click.echo(f"spool {spool_path or spool.spool_dir()}: nothing to sync")
        return
    if dry_run:
        for entry in waiting:
            click.echo(entry.describe())
        return
    _upload(waiting)
    click.echo(f"{len(waiting)} spooled pass(es) uploaded to {spool.public_uri(mlflow.get_tracking_uri())}")


def _upload(waiting) -> None:
    """Publish the spooled passes in order, removing each once its run exists, one line each; a store error stops at
    the entry it reached, saying how many were uploaded."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.tracking import spool, store  # deferred: imports mlflow

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


COMMANDS = (rejudge_cmd, exclude_cmd, sync)
