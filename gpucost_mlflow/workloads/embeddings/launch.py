"""Built-in sentence embeddings, as the launcher describes them: the encoder folder and its pooling."""

from __future__ import annotations

from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.base import Described
from gpucost_mlflow.workloads.embeddings import child
from gpucost_mlflow.workloads.embeddings.workload import Workload
from gpucost_mlflow.workloads.minilm import base_model_dir, model_sources


def default_model(root: Path) -> Path:
    """`--model auto` under an embeddings protocol: the packaged all-MiniLM-L6-v2 files."""

    return base_model_dir()


def describe(workload, variant, model_path: Path, protocol, record) -> Described:
    """The encoder's revision, tokenizer and architecture, its pooling, and the package it came from."""

    info = child.describe(model_path)
    labels = list(protocol.labels)
    return Described(workload, {
        "path": str(model_path.resolve()), "revision": info["revision"],
        "tokenizer_revision": info["tokenizer_revision"], "labels": labels, "architecture": info["architecture"],
        "sources": _packaged_sources(model_path), "trained_on": {},
    }, record.extended(Workload, pooling=info["pooling"]), labels)


def _packaged_sources(model_path: Path) -> list[dict]:
    """The package records of the all-MiniLM-L6-v2 files when the encoder is that packaged folder."""

    try:
        packaged = base_model_dir().resolve() == model_path.resolve()
    except GpucostError:
        return []
    return model_sources() if packaged else []
