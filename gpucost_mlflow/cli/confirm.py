"""`gpucost confirm`: whether the chosen configuration holds beyond the five short passes it was picked from."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from gpucost_mlflow.cli.options import AUTO_MODEL, EXPERIMENT_HELP, MODEL_HELP, _experiment, _file, _model, _under
from gpucost_mlflow.cli.passes import CODE_ROOT
from gpucost_mlflow.cli.report import _build_report
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.variants import read_declaration


@click.command("confirm")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True)
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), multiple=True,
              help="The price catalog(s) the decision is read over, as `gpucost report --catalog`.")
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path), default=None,
              help="The confirmation corpus (default: the protocol's confirmation.file, else confirmation.jsonl beside "
                   "the comparison corpus, as `gpucost corpus build` writes it).")
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
              help=MODEL_HELP)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."),
              help="Folder that relative paths are resolved from.")
def confirm(experiment, protocol_file, variants_file, catalog_file, corpus_path, model_path, root) -> None:
    """Run the chosen configuration (of a tie, the one the card runs) on the confirmation corpus for the protocol's
    confirmation.min_s, judged by the same bars; when it does not hold it leaves the tie, and the next one the card
    runs is confirmed in turn, until one holds or the tie is spent. The report then says confirmed or not."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.flow import confirm as confirming  # deferred: imports torch

    name, protocol_path = _experiment(experiment), _file(protocol_file, root)
    declared = read_declaration(_file(variants_file, root))
    catalogs = tuple(_under(root, p) for p in catalog_file)
    protocol = load_protocol(protocol_path)
    built, _, _, _ = _build_report(name, protocol_path, catalogs, declared, what_if=False)
    if not built.choice.decided:
        click.echo(f"nothing to confirm: {built.decision}")
        return

    @functools.cache
    def plan() -> confirming.ConfirmPlan:
        return confirming.ConfirmPlan(
            experiment=name, protocol=protocol, protocol_path=protocol_path, declared=declared,
            corpus_path=_under(root, corpus_path) if corpus_path else confirming.corpus_of(root, protocol),
            model_path=_model(root, model_path, protocol_path), code_root=CODE_ROOT)

    def confirm_one(a, left: str) -> None:
        confirming.check([a], plan())
        tied = f" (the next of its tie: {left} left it)" if left else ""
        click.echo(f"confirming {a.configuration.name}{tied} on {plan().corpus_path} for at least "
                   f"{protocol.confirmation.min_s:g} s each (confirmation.min_s)")
        confirming.run([a], plan(), lambda variant, result, why: click.echo(
            f"{why}: {variant} {result.status} ({result.reason}); run {result.run_id}"))

    built, ran = confirming.in_turn(
        built, lambda: _build_report(name, protocol_path, catalogs, declared, what_if=False)[0], confirm_one)
    if not ran:
        for a in built.choice.chosen[:1]:
            found = built.confirmations[a.configuration.name]
            click.echo(f"{a.configuration.name}: already {found.verdict} ({found.figures})")
    for a in built.choice.chosen[:1] + built.choice.unconfirmed:
        found = built.confirmations[a.configuration.name]
        click.echo(f"{a.configuration.name}: {found.verdict} ({found.figures})")
    click.echo(built.decision)


COMMANDS = (confirm,)
