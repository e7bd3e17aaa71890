"""`gpucost deliver`: production corpora through the chosen variant, one child per `deliverables.per_child` of them."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpucost_mlflow.cli.options import AUTO_MODEL, EXPERIMENT_HELP, MODEL_HELP, _experiment, _file, _model, _under
from gpucost_mlflow.cli.passes import CODE_ROOT
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.variants import read_declaration
from gpucost_mlflow.core.judging.status import Status


@click.command("deliver")
@click.option("--corpora", "corpora_dir", type=click.Path(path_type=Path), required=True,
              help="A folder of corpus files (*.jsonl: id and text, labels optional), delivered in name order.")
@click.option("--variant", "variant_name", required=True, help="The variant that delivers (the decision's choice).")
@click.option("--variants", "variants_file", type=click.Path(path_type=Path), default=shipped.VARIANTS,
              show_default=True)
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
              help=MODEL_HELP)
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."),
              help="Folder that relative paths are resolved from.")
def deliver(corpora_dir, variant_name, variants_file, model_path, experiment, protocol_file, root) -> None:
    """Deliver every corpus of the folder: one deliverable run per corpus under one delivery run, loading and warming
    up once per child of the protocol's deliverables.per_child corpora (all of them when not declared; a lanes variant:
    fresh lane children per corpus)."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.flow import deliver as delivering  # deferred: imports torch

    protocol_path, declared = _file(protocol_file, root), read_declaration(_file(variants_file, root))
    protocol = load_protocol(protocol_path)
    plan = delivering.DeliveryPlan(
        variant=declared.variant(variant_name), corpora=delivering.corpora_in(_under(root, corpora_dir)),
        model_path=_model(root, model_path, protocol_path), experiment=_experiment(experiment),
        protocol_path=protocol_path, declared=declared, code_root=CODE_ROOT,
        per_child=protocol.deliverables.per_child)

    def said(number: int, results) -> None:
        for result in results:
            click.echo(f"child {number}: {result.status} ({result.reason}); run {result.run_id}")

    try:
        delivered = delivering.deliver(plan, said)
    except KeyboardInterrupt:
        click.echo("delivery interrupted: the corpora not recorded are closed as interrupted", err=True)
        sys.exit(130)
    accepted = sum(r.status == Status.ACCEPTED for r in delivered.results)
    click.echo(f"delivery run {delivered.run_id}: {len(delivered.results)} corpora in {delivered.children} "
               f"child{'ren' if delivered.children != 1 else ''}, {accepted} accepted")


COMMANDS = (deliver,)
