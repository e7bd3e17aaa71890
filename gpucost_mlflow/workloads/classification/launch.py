"""The built-in classifier, as the launcher describes it: its classifier folder (labels from its config)."""

from __future__ import annotations

from pathlib import Path

from gpucost_mlflow.core.kinds.base import Described

DEMO_CLASSIFIER = Path("data/model")


def default_model(root: Path) -> Path:
    """`--model auto` under a labels protocol: the demo classifier `make demo` trains."""
    return root / DEMO_CLASSIFIER


def describe(workload, variant, model_path: Path, protocol, record) -> Described:
    """The classifier folder's revision, tokenizer, labels, architecture and provenance."""
    from gpucost_mlflow.execution import models  # deferred: imports torch

    model = models.describe_model(model_path)
    return Described(workload, {
        "path": model.path, "revision": model.revision, "tokenizer_revision": model.tokenizer_revision,
        "labels": model.labels, "architecture": model.architecture,
        "sources": model.provenance.get("sources", []), "trained_on": model.provenance.get("tuning_corpus", {}),
    }, record, model.labels)
