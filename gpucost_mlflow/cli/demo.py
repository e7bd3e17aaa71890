"""`gpucost demo variants`: the variants `make demo` runs on this machine, and why any were left out."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import _file
from gpucost_mlflow.core.campaign.demo import DEMO_VARIANTS, fit
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.variants import load_variants


@click.group()
def demo() -> None:
    """What `make demo` runs here."""


@demo.command("variants")
@click.option("--variants", "names", default=",".join(DEMO_VARIANTS), show_default=True,
              help="Comma-separated variants the demo would run before fitting them to this machine.")
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Device whose cached dense-matmul peaks (`gpucost doctor --peak`) decide.")
@click.option("--list", "as_list", is_flag=True,
              help="Print only the kept variants, comma-separated, on stdout (the Makefile's form); the line saying "
                   "what was left out goes to stderr.")
def demo_variants(names, variants_file, device, as_list) -> None:
    """Leave out each variant whose precision runs slower than fp32 here (its cached peak below fp32's), in one line
    saying why; with no peak cached, keep every variant and say so."""
    from gpucost_mlflow.flow.propose import peaks_known, slow_precisions  # deferred: imports mlflow

    declared = load_variants(_file(variants_file))
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in declared]
    if not wanted or unknown:
        raise GpucostError(f"unknown demo variant(s) {', '.join(unknown) or '(none given)'} in {variants_file}")
    fitted = fit({name: declared[name].settings.precision for name in wanted}, slow_precisions(device))
    if not fitted.kept:
        raise GpucostError("every demo variant was left out on this machine: " + fitted.line())
    notes = [fitted.line()] if fitted.left_out else []
    if not peaks_known(device):
        notes.append("no dense-matmul peak cached for this device (`gpucost doctor --peak`): every precision kept")
    if as_list:
        click.echo(",".join(fitted.kept))
        for note in notes:
            click.echo(note, err=True)
        return
    click.echo("the demo runs here: " + ", ".join(fitted.kept))
    for note in notes:
        click.echo(note)


COMMANDS = (demo,)
