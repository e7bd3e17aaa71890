"""What the command modules share: defaults, the whole-number option type, path and experiment resolution, and the
lines more than one command prints (the MLflow UI link, the passes judged again)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.sampling import DEFAULT_BUCKET_SIZES
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.money.catalog import load_catalog, merged
from gpucost_mlflow.tracking import schema

if TYPE_CHECKING:
    from gpucost_mlflow.core.inputs.protocol import Protocol

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
              "a generations protocol (a .gguf file may be given). A python: workload gets it as "
              "settings['model_path'].")


def _model(root: Path, model_path: Path, protocol_path: Path) -> Path:
    """--model as given, or for `auto` the default model of what the protocol judges (flow/workloads.py)."""
    if str(model_path) != AUTO_MODEL:
        return _under(root, model_path)
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.flow.workloads import default_model  # deferred: imports numpy

    return default_model(load_protocol(protocol_path).acceptance.output, root)


EXPERIMENT_HELP = ("MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else the one MLFLOW_EXPERIMENT_ID names, else "
                   "MLflow's 'Default', where `mlflow run` puts a run without --experiment-name).")


def _experiment(name: str | None) -> str:
    """The experiment a command reads or writes: --experiment, else the one the environment names as `mlflow run` reads
    it, else MLflow's default experiment, so `gpucost` and `mlflow run projects` share one default."""
    import os


    if name or os.environ.get("MLFLOW_EXPERIMENT_NAME"):
        return name or os.environ["MLFLOW_EXPERIMENT_NAME"]
    if os.environ.get("MLFLOW_EXPERIMENT_ID"):
        from gpucost_mlflow.tracking.experiments import name_of  # deferred: imports mlflow

        return name_of(os.environ["MLFLOW_EXPERIMENT_ID"])
    return schema.DEFAULT_EXPERIMENT


CORPUS_HELP = "The corpus file (default: the one the protocol names, corpus.file, under --root)."


def _corpus(root: Path, corpus_path: str | None, protocol_path: Path) -> Path:
    """--corpus as given, or the protocol's corpus.file under root; a missing one is refused in one line that names
    the command building it (before any run exists)."""
    if corpus_path:
        return _under(root, Path(corpus_path))
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

    protocol = load_protocol(protocol_path)
    path = _under(root, Path(protocol.corpus_file))
    if not path.exists():
        raise GpucostError(f"{_shown(root, Path(protocol.corpus_file))}: the corpus {protocol_path} names is missing; "
                           f"{_builds(root, protocol)} (or pass --corpus FILE)")
    return path


def _shown(root: Path, path: Path) -> str:
    """A path under root as a user can type it: as written under the working folder, absolute under another root."""
    return str(path if path.is_absolute() or root == Path(".") else (root / path).resolve())


def _built() -> str:
    """The comparison corpus's file name as `gpucost corpus build` writes it (the default kind's demo inputs)."""
    return registry.default_module("demo_inputs").COMPARISON


def _builds(root: Path, protocol: Protocol) -> str:
    """How to build a protocol's missing corpus: its slice of another corpus (`corpus.slice_of`), that corpus first when
    it is missing too, or `gpucost corpus build` for the builder's own file."""

    target = Path(protocol.corpus_file)
    if not protocol.corpus_slice_of:
        if target.name != _built():
            return "write it there"
        return f"build it with `{_build_command(root, target, protocol.corpus_size)}`"
    source = Path(protocol.corpus_slice_of)
    command = (f"gpucost corpus slice --corpus {_shown(root, source)} --size {protocol.corpus_size} "
               f"--out {_shown(root, target)}")
    if _under(root, source).exists():
        return f"it is a slice of {_shown(root, source)}: build it with `{command}`"
    if source.name != _built():
        return f"it is a slice of {_shown(root, source)}, missing too: write that corpus there, then run `{command}`"
    return (f"it is a slice of {_shown(root, source)}, missing too: build both with "
            f"`{_build_command(root, source, None)} && {command}`")


def _build_command(root: Path, comparison: Path, size: int | None) -> str:
    """`gpucost corpus build` writing this comparison file (its folder as --out; --size when not the default)."""

    sized = f" --size {size}" if size is not None and size != sum(DEFAULT_BUCKET_SIZES.values()) else ""
    return f"gpucost corpus build --out {_shown(root, comparison.parent)}{sized}"


def _catalog(catalog_file):
    """One catalog file, or several read as one (a tuple of paths); the shipped lab kit when none is named."""

    if isinstance(catalog_file, tuple):
        return merged([load_catalog(path) for path in catalog_file]) if catalog_file else _catalog(None)
    return load_catalog(catalog_file if catalog_file is not None else _file(shipped.CATALOG))


def _echo_ui_link(experiment_id: str) -> None:
    """The experiment's passes in the MLflow UI (model training, not the GenAI overview; gpucost's saved view of
    them, written first if the experiment lacks it), as a link to open as is."""
    import mlflow

    from gpucost_mlflow.tracking import store  # deferred: imports mlflow
    from gpucost_mlflow.tracking.experiments import presented  # deferred: imports mlflow
    from gpucost_mlflow.tracking.ui import link_line  # deferred: imports mlflow

    view = presented(store.client(), experiment_id)
    click.echo(link_line(mlflow.get_tracking_uri(), experiment_id, view))


def _echo_rejudged(judged) -> list[str]:
    """One line per pass judged again, the same for `gpucost rejudge` and `gpucost report`; returns the lines."""
    lines = [item.line() for item in judged]
    for line in lines:
        click.echo(line)
    return lines
