"""A hosted API's batch tier: `gpucost hosted batch-file` writes the Batch API input file for the corpus,
`gpucost hosted batch-import` records the provider's output as a judged pass of the variant."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import AUTO_MODEL, CORPUS_HELP, EXPERIMENT_HELP, MODEL_HELP, _under
from gpucost_mlflow.cli.passes import InputFiles, _pass_figures, _pass_request
from gpucost_mlflow.core.inputs import shipped


def _inputs(function):
    """The options a batch file and its import share: the variant, corpus, model, variants file, protocol, root."""
    for option in reversed([
        click.option("--variant", "variant_name", required=True,
                     help="A generation variant on engine openai whose endpoint.base_url is the hosted API."),
        click.option("--corpus", "corpus_path", type=click.Path(), default=None, help=CORPUS_HELP),
        click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
                     help=f"{MODEL_HELP} Its tokenizer cuts the prompts as a live pass does."),
        click.option("--variants", "variants_file", type=click.Path(path_type=Path), default=shipped.VARIANTS,
                     show_default=True),
        click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
                     show_default=True),
        click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."),
                     help="Folder that relative paths are resolved from."),
    ]):
        function = option(function)
    return function


@click.group("hosted")
def hosted() -> None:
    """A hosted API's batch tier, measured and judged like every configuration."""


@hosted.command("batch-file")
@_inputs
@click.option("--out", "out_path", type=click.Path(path_type=Path), required=True,
              help="The Batch API input file to write (JSON lines).")
def batch_file(variant_name, corpus_path, model_path, variants_file, protocol_file, root, out_path) -> None:
    """Write the OpenAI Batch API input file for the corpus: one greedy request per input, custom_id its id."""
    from gpucost_mlflow.flow import hosted as batch  # deferred: imports torch

    request = _pass_request(variant_name, None, "benchmark",
                            InputFiles(corpus_path, model_path, variants_file, protocol_file, root))
    target = _under(root, out_path)
    count = batch.batch_file(request, target)
    click.echo(f"{count} requests for {request.variant.name} written to {target}; submit it to the provider's batch "
               "API, then `gpucost hosted batch-import` its output file")


@hosted.command("batch-import")
@_inputs
@click.option("--results", "results_path", type=click.Path(path_type=Path), required=True,
              help="The provider's batch output file (JSON lines, custom_id per input).")
@click.option("--completed-in", "completed_in", type=float, required=True,
              help="Hours the batch took from submission to completion: the pass's duration.")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
def batch_import(variant_name, corpus_path, model_path, variants_file, protocol_file, root, results_path,
                 completed_in, experiment) -> None:
    """Judge the provider's output against the protocol and the reference and record it as a pass of the variant."""
    from gpucost_mlflow.flow import hosted as batch  # deferred: imports torch

    request = _pass_request(variant_name, experiment, "benchmark",
                            InputFiles(corpus_path, model_path, variants_file, protocol_file, root))
    result = batch.import_batch(request, _under(root, results_path), completed_in)
    click.echo(f"batch {request.variant.name}: {result.status} ({result.reason}); {_pass_figures(result.metrics)}; "
               f"run {result.run_id}")


COMMANDS = (hosted,)
