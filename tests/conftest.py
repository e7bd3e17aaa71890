"""Shared fixtures: a small slice of the real corpus, the real MiniLM encoder with a fresh head, a SQLite store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.pop("GPUCOST_FAULT", None)

ROOT = Path(__file__).resolve().parents[1]
LABELS = ["fresh", "plot", "rotten"]


@pytest.fixture(scope="session", autouse=True)
def peak_cache(tmp_path_factory) -> Path:
    """Dense-matmul peaks go to a session folder, never to the developer's own cache."""
    path = tmp_path_factory.mktemp("peak") / "peak.json"
    os.environ["GPUCOST_PEAK_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    """A 30-input comparison corpus and 30-input tuning corpus built from the real default source."""
    from gpucost_mlflow.prepare import build_corpus

    out = tmp_path_factory.mktemp("corpus")
    build_corpus(out, source=None, labels=None, tokenizer_dir=None, size=30, tuning_size=30, seed=0)
    return out


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """all-MiniLM-L6-v2 with a seeded, untrained 3-label head: the real architecture, fast to save."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from gpucost_mlflow.prepare import base_model_dir

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("model")
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base_model_dir()), num_labels=3, id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(base_model_dir())).save_pretrained(out)
    return out


@pytest.fixture
def store(tmp_path, monkeypatch) -> str:
    """A fresh SQLite tracking store in a fresh working directory."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.setenv("GPUCOST_SPOOL", str(tmp_path / "spool"))
    monkeypatch.chdir(tmp_path)
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(uri)
    # Create the store's tables now: a subprocess started by the test would otherwise race this
    # process to run the same schema migration ("table _alembic_tmp_experiments already exists").
    MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
    yield uri
    mlflow.set_tracking_uri(None)


PROTOCOL_TEMPLATE = """
question: Which configuration classifies the test slice for the lowest budget?
scenario: offline
corpus:
  file: comparison.jsonl
  size: 30
  buckets: {{short: 18, medium: 9, long: 3}}
  labels: [fresh, plot, rotten]
acceptance:
  ids: exact
  format: predictions.jsonl.gz with id, label, score
  coverage: 1.0
  main_metric: macro_f1
  threshold: {threshold}
  per_bucket_threshold: 0.0
  reference:
    variant: batch8
    max_metric_difference: {max_diff}
    min_label_agreement: {min_agreement}
passes_per_variant: 5
warmup: {{inputs: 8, passes: 1}}
exclusion_rule: documented external cause only, same rule for all variants
deadline: "2026-12-04T09:00:00+01:00"
deliverables: {{expected: 1, description: the slice classified once}}
"""


def write_protocol(path: Path, threshold: float = 0.0, max_diff: float = 0.05, min_agreement: float = 0.9) -> Path:
    path.write_text(PROTOCOL_TEMPLATE.format(threshold=threshold, max_diff=max_diff, min_agreement=min_agreement))
    return path


@pytest.fixture(scope="session")
def protocol_file(tmp_path_factory) -> Path:
    """A protocol for the 30-input slice: quality bar 0 (the head is untrained), tolerance as the demo's."""
    return write_protocol(tmp_path_factory.mktemp("protocol") / "protocol.yaml")
