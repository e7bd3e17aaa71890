"""What the command modules share: defaults, the whole-number option type, path and experiment resolution, and the
lines more than one command prints (the MLflow UI link, the passes judged again)."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped

DEFAULT_CORPUS_DIR = Path("data/corpus")
DEFAULT_MODEL_DIR = Path("data/model")
DEFAULT_TUNING_SIZE = 4000


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


def _catalog(catalog_file):
    from gpucost_mlflow.core.money.catalog import load_catalog

    return load_catalog(catalog_file if catalog_file is not None else _file(shipped.CATALOG))


def _echo_ui_link(experiment_id: str) -> None:
    """The experiment's runs table in the MLflow UI (not its GenAI overview), as a link to open as is."""
    import mlflow

    from gpucost_mlflow.tracking.ui import link_line

    click.echo(link_line(mlflow.get_tracking_uri(), experiment_id))


def _echo_rejudged(judged) -> list[str]:
    """One line per pass judged again, the same for `gpucost rejudge` and `gpucost report`; returns the lines."""
    lines = [item.line() for item in judged]
    for line in lines:
        click.echo(line)
    return lines
