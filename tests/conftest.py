"""Shared fixtures (a small slice of the real corpus, a tiny fine-tuned classifier and the real MiniLM encoder with
a fresh head, a SQLite store, the fork server that starts passes' children)
and the two kinds of test: `unit` and `integration`."""

from __future__ import annotations

import gc
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The helpers (MLflow, the CLI, the report) are imported by the fixtures that use them: pytest-xdist's controller
# process loads this file too, and would otherwise spend seconds importing what only the workers run.

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


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the tests reach the workers in tests/scheduling.py's order (slow modules first)."""
    from tests import scheduling

    config.pluginmanager.register(scheduling, "gpucost-scheduling")


# `make unit-py` runs the unit tests on another Python in a venv without torch (no CPU wheel of it there): a test
# module or a test that needs torch is reported skipped, with the reason, instead of failing on the import.
TORCH_ABSENT = importlib.util.find_spec("torch") is None
NEEDS_TORCH = "needs torch, which this venv leaves out (make unit-py: no CPU wheel of torch for this Python here)"


def _for_want_of_torch(text: str) -> bool:
    return TORCH_ABSENT and "No module named 'torch'" in text


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    if report.failed and _for_want_of_torch(str(report.longrepr)):
        report.outcome, report.longrepr = "skipped", (str(collector.path), 0, f"Skipped: {NEEDS_TORCH}")
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and call.excinfo is not None and _for_want_of_torch(str(call.excinfo.value)):
        report.outcome, report.longrepr = "skipped", (str(item.path), 0, f"Skipped: {NEEDS_TORCH}")
    return report


# The collector's full passes scan every object that lives, and a worker's live objects are mostly what it imported
# (torch, transformers, MLflow, SQLAlchemy: about a million): a full pass took half a second, and a worker spent 7 to
# 9 s of `make unit` in them (2026-12-05, docs/benchmarks.md). What lives when a test module starts has survived
# every test before it and is here to stay: it is collected once, then frozen out of later passes.
_FROZEN_AT: list = [None]
# Between freezes, the collector's young passes ran every 700 allocations and its full passes whenever the objects
# made since the last freeze reached a quarter of the few that were not frozen: 2.2 s of each worker's wall. Ten
# thousand allocations a young pass, and twenty of those a middle one, left 1.4 s (2026-12-05, docs/benchmarks.md).
GC_THRESHOLDS = (10_000, 20, 20)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """No collector pass while the test modules import the suite's libraries: nothing they make is garbage, and the
    full passes over a heap growing to a million objects took 0.6 s of each worker (the first test freezes it)."""
    gc.disable()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return (yield)
    finally:
        gc.enable()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """At the first test of each module: collect, then freeze what survived (gc.freeze)."""
    module = getattr(item, "module", None)
    if module is not _FROZEN_AT[0]:
        _FROZEN_AT[0] = module
        gc.collect()
        gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """MLflow keeps every SQL store a process opened, with its engine, for the life of the process (a cache of 100
    stores, a map of engines without bound); each test opens its own, so the stores are let go when it ends."""
    if "mlflow" in sys.modules:
        from tests.helpers import release_stores

        release_stores()


@pytest.fixture(scope="session", autouse=True)
def peak_cache(tmp_path_factory) -> Path:
    """Dense-matmul peaks go to a session folder, never to the developer's own cache."""
    path = tmp_path_factory.mktemp("peak") / "peak.json"
    os.environ["GPUCOST_PEAK_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session", autouse=True)
def fork_server(request, tmp_path_factory):
    """Passes' children forked from one server per test worker that imported torch and transformers once
    (`execution/forkserver.py`), started only when the run holds a test that is not a unit test. The pass runs the
    runner's own main on its spec: only the interpreter start and imports outside every timed part are skipped.
    Tests of the product's own child start remove GPUCOST_FORK_SERVER (`plain_child_start`)."""
    if not any(item.get_closest_marker("integration") for item in request.session.items):
        yield None
        return
    from gpucost_mlflow.execution import forkserver

    path = tmp_path_factory.mktemp("forkserver") / "s"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    # The stand-in fleet's jobs name their device through GPUCOST_TEST_DEVICE_NAME (tests/fakes/device_name): their
    # passes fork from this server too. Without that variable, nothing changes.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent / "fakes" / "device_name"),
                                                      env.get("PYTHONPATH", "")]))
    server = subprocess.Popen([sys.executable, "-m", "gpucost_mlflow.execution.forkserver", "serve", str(path)],
                              env=env, stdin=subprocess.DEVNULL)
    os.environ[forkserver.ENV] = str(path)
    yield path
    os.environ.pop(forkserver.ENV, None)
    server.kill()
    server.wait()


@pytest.fixture(scope="session", autouse=True)
def schema_head_read_once() -> None:
    """MLflow reads its ~70 migration scripts to learn the latest schema revision every time it opens a SQL store
    (40 ms, a tenth of a unit test's time), though the answer only changes with the installed MLflow. Tests open
    hundreds of stores in one process: the answer is read once per worker. Each store's own revision is still
    compared with it, as MLflow does; the product opens one store per process and is unchanged."""
    import functools

    from mlflow.store.db import utils

    utils._get_latest_schema_revision = functools.cache(utils._get_latest_schema_revision)


class _CompiledOnce:
    """SQLAlchemy's cache of compiled statements, shared by every engine of a worker: SQLAlchemy keys a statement by
    the engine's own dialect object, so a fresh engine compiles each statement again (about 30 a store, 0.5 ms each).
    Here the key names the dialect's class and the server version instead: the same SQL for every SQLite store."""

    def __init__(self) -> None:
        from sqlalchemy.util import LRUCache

        self._cache = LRUCache(2000)

    @staticmethod
    def _key(key: tuple) -> tuple:
        dialect = key[0]
        return (type(dialect), dialect.server_version_info, *key[1:])

    def get(self, key: tuple, default=None):
        return self._cache.get(self._key(key), default)

    def __setitem__(self, key: tuple, value) -> None:
        self._cache[self._key(key)] = value


@pytest.fixture(scope="session", autouse=True)
def statements_compiled_once() -> None:
    """Each test opens its own stores, each with a fresh SQLAlchemy engine that compiles every statement it runs
    (200 stores and 6,600 compilations in a `make unit` run); the product opens one store per process. Every SQLite
    engine and every ORM mapper's flush statements read one cache per worker (`_CompiledOnce`)."""
    from mlflow.store.tracking.dbmodels.models import Base
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import configure_mappers

    shared = _CompiledOnce()

    @event.listens_for(Engine, "engine_connect")
    def share(connection) -> None:
        if connection.dialect.name == "sqlite":
            connection.engine._compiled_cache = shared

    configure_mappers()
    for mapper in Base.registry.mappers:
        mapper.__dict__["_compiled_cache"] = shared
    yield
    event.remove(Engine, "engine_connect", share)


@pytest.fixture
def plain_child_start(monkeypatch) -> None:
    """This test's passes start their child as the product does: a fresh interpreter importing everything."""
    from gpucost_mlflow.execution import forkserver

    monkeypatch.delenv(forkserver.ENV, raising=False)


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    """A 30-input comparison corpus and 30-input tuning corpus built from the real default source."""
    from gpucost_mlflow.workloads.classification.demo_inputs import Sizes, build_corpus
    from tests.kept import copy_of

    def build(out: Path) -> None:
        build_corpus(out, source=None, labels=None, tokenizer_dir=None, sizes=Sizes(30, 30), seed=0)

    return copy_of("corpus", build, tmp_path_factory.mktemp("corpus"),
                   ["gpucost_mlflow.workloads.classification.demo_inputs"])


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory) -> Path:
    """The dequantised GGUF goes to a folder of this test session, never to the developer's own cache; the session's
    workers share it (the cache is written whole and renamed, so a worker reads it whole or writes its own). Only a
    worker's base folder has the session's as its parent: a run without workers keeps the cache in its own."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "model-cache"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    """A 2-layer Llama GGUF file with the packaged SmolLM2 file's tokenizer (tests/tiny_gguf.py): the same bytes in
    every worker, so its dequantised copy in `model_cache` is made once per session."""
    from gpucost_mlflow.core.inputs import sources
    from tests.tiny_gguf import build_tiny_gguf

    packaged = sources.package_path(*sources.DEFAULT_GENERATION_PACKAGE)
    return build_tiny_gguf(tmp_path_factory.mktemp("tiny-gguf") / "tiny-llama.gguf", packaged)


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory) -> Path:
    """all-MiniLM-L6-v2 with a seeded, untrained 3-label head: the real architecture, for the tests about its
    numbers (shape, FLOPs, parameter count)."""
    from tests.kept import copy_of

    def build(out: Path) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from gpucost_mlflow.workloads.minilm import base_model_dir
        from tests.helpers import LABELS

        hf_logging.set_verbosity_error()
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(base_model_dir()), num_labels=3, id2label=dict(enumerate(LABELS)),
            label2id={label: i for i, label in enumerate(LABELS)},
        )
        model.save_pretrained(out)
        AutoTokenizer.from_pretrained(str(base_model_dir())).save_pretrained(out)

    return copy_of("minilm", build, tmp_path_factory.mktemp("minilm"), ["gpucost_mlflow.workloads.minilm"])


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory, corpus_dir) -> Path:
    """The plumbing tests' classifier: MiniLM's tokenizer and a 2-layer, 32-wide BERT, fine-tuned once on the
    slice's tuning corpus by the demo's own trainer (tests/tiny_model.py). A pass runs, writes and is judged as
    with the real model, in a fraction of its load and compute."""
    import shutil

    from tests.kept import copy_of
    from tests.tiny_model import build_tiny_classifier

    def build(out: Path) -> None:
        work = out.with_name(f"{out.name}-work")
        os.replace(build_tiny_classifier(work, corpus_dir / "tuning.jsonl"), out)
        shutil.rmtree(work)

    return copy_of("tiny-model", build, tmp_path_factory.mktemp("tiny-model"),
                   ["gpucost_mlflow.workloads.classification.training", "gpucost_mlflow.workloads.minilm",
                    "gpucost_mlflow.workloads.classification.demo_inputs"])  # and the corpus it is tuned on


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory) -> Path:
    """An empty tracking store with every MLflow migration run: every test's store is a copy of it. It depends on
    the installed MLflow alone, so it is kept in the venv per MLflow version (two to three seconds of migrations
    per worker and session otherwise); the first session of a venv writes it whole, then renames it."""
    import shutil

    import mlflow

    from tests.helpers import migrate_store
    from tests.kept import CACHE

    kept = CACHE / f"mlflow-{mlflow.__version__}-empty.db"
    if not kept.is_file():
        built = migrate_store(tmp_path_factory.mktemp("migrating"))
        kept.parent.mkdir(exist_ok=True)
        staged = kept.with_name(f"{kept.name}.{os.getpid()}")
        shutil.copyfile(built, staged)
        _move_default_artifacts(staged, str(built.parent), STORE_FOLDER)
        os.replace(staged, kept)
    folder = tmp_path_factory.mktemp("migrated")
    shutil.copyfile(kept, folder / "mlflow.db")
    _move_default_artifacts(folder / "mlflow.db", STORE_FOLDER, str(folder))
    return folder / "mlflow.db"


STORE_FOLDER = "@store-folder@"  # the kept store's Default experiment keeps its artifacts under this placeholder


def _move_default_artifacts(path: Path, old: str, new: str) -> None:
    """The Default experiment's artifact location moved from the folder `old` to `new`, as a new store there has."""
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE experiments SET artifact_location = replace(artifact_location, ?, ?) "
                           "WHERE experiment_id = 0", (old, new))


@pytest.fixture
def store(tmp_path, monkeypatch, migrated_store) -> str:
    """A fresh SQLite tracking store in a fresh working directory."""
    import mlflow

    from tests.helpers import use_store

    yield use_store(tmp_path, monkeypatch, migrated_store)
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="session")
def protocol_file(tmp_path_factory) -> Path:
    """A protocol for the 30-input slice: quality bar 0 (the head is untrained), tolerance as the demo's."""
    from tests.helpers import write_protocol

    return write_protocol(tmp_path_factory.mktemp("protocol") / "protocol.yaml")


@pytest.fixture
def experiment(store):
    """The report tests' experiment, locked to the shipped protocol, and a writer of attempts through writer.py."""
    from tests import scenario

    return scenario.attempt_writer()
