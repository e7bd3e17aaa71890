"""Shared fixtures (a small slice of the real corpus, the real MiniLM encoder with a fresh head, a SQLite store)
and the two kinds of test: `unit` and `integration`."""

from __future__ import annotations

import os
from pathlib import Path

import mlflow
import pytest

from tests import scenario
from tests.helpers import LABELS, migrate_store, use_store, write_protocol

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.pop("GPUCOST_FAULT", None)

KINDS = ("unit", "integration")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test is of one kind, declared by itself or its module; one that declares none is `integration`,
    so it still runs in `make test` and stays out of `make unit` until it says it is a unit test."""
    for item in items:
        declared = [kind for kind in KINDS if item.get_closest_marker(kind)]
        if len(declared) > 1:
            raise pytest.UsageError(f"{item.nodeid} is marked both unit and integration: a test is one or the other")
        if not declared:
            item.add_marker(pytest.mark.integration)


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


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory) -> Path:
    """An empty tracking store migrated once: every test's store is a copy of it."""
    return migrate_store(tmp_path_factory.mktemp("migrated"))


@pytest.fixture
def store(tmp_path, monkeypatch, migrated_store) -> str:
    """A fresh SQLite tracking store in a fresh working directory."""
    yield use_store(tmp_path, monkeypatch, migrated_store)
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="session")
def protocol_file(tmp_path_factory) -> Path:
    """A protocol for the 30-input slice: quality bar 0 (the head is untrained), tolerance as the demo's."""
    return write_protocol(tmp_path_factory.mktemp("protocol") / "protocol.yaml")


@pytest.fixture
def experiment(store):
    """The report tests' experiment, locked to the shipped protocol, and a writer of attempts through writer.py."""
    return scenario.attempt_writer()
