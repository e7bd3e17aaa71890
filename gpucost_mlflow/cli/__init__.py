"""The `gpucost` command line: thin click commands over the core, execution and tracking layers.

One module per command group, each command parsing its options, calling one function and printing:
inputs (corpus, model, variants, protocol), passes (pass, campaign), kept (rejudge, exclude, sync),
money (packages, window, plan), catalog (catalog example, catalog import), report (report, attempts), machine
(memory, doctor), bill (bill), demo (what `make demo` runs here), fleet (one campaign per GPU type through SkyPilot),
hosted (a hosted API's batch tier);
options holds what they share. Every import that reaches torch or mlflow stays inside a command.
"""

from __future__ import annotations

import click

from gpucost_mlflow.cli import (
    bill,
    catalog,
    confirm,
    deliver,
    demo,
    fleet,
    hosted,
    inputs,
    kept,
    machine,
    money,
    passes,
    report,
)
from gpucost_mlflow.core.errors import GpucostError


class Gpucost(click.Group):
    """Turns every GpucostError into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GpucostError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(GpucostError.exit_code)
        except Exception as exc:
            from gpucost_mlflow.tracking import store  # deferred: imports mlflow

            if not store.is_store_error(exc):
                raise
            click.echo(f"Error: {store.describe_error(exc)}", err=True)
            ctx.exit(GpucostError.exit_code)


@click.group(cls=Gpucost)
@click.version_option(package_name="gpucost-mlflow")
def main() -> None:
    """Which GPU configuration costs the least for the same ML result? Passes, campaigns and costs on MLflow."""


for _module in (inputs, passes, kept, confirm, deliver, money, catalog, report, machine, bill, demo, fleet, hosted):
    for _command in _module.COMMANDS:
        main.add_command(_command)
