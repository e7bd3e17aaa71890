"""What several test modules share: the repository's paths, a test protocol, a store, one way to run a pass."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import sqlite3
import sys
from pathlib import Path
from types import ModuleType

import mlflow
import pytest
from click.testing import CliRunner, Result
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ROOT / "projects" / "variants.yaml"
SHIPPED_PROTOCOL = ROOT / "projects" / "protocol.yaml"
CATALOG = ROOT / "catalog" / "labkit-2026-09-24.csv"
# The first ROCm matrix snapshot, kept for the record beside the newer ones the checks read.
FIRST_ROCM_MATRIX = ROOT / "catalog" / "rocm-framework-matrix-2024-03-22.csv"
LABELS = ["fresh", "plot", "rotten"]

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
max_spread_ratio: 10  # a 30-input slice times in tens of milliseconds on a shared CPU: clock noise, not the product
warmup: {{inputs: 8, passes: 1}}
exclusion_rule: documented external cause only, same rule for all variants
deadline: "2026-12-04T09:00:00+01:00"
deliverables: {{expected: 1, description: the slice classified once}}
"""


def cli_runner() -> CliRunner:
    """A click test runner whose result has stdout and stderr apart, as a terminal shows them: click 8.2 and later
    always keep them apart, click 8.1 (which SkyPilot pins) only when asked."""
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def write_protocol(path: Path, threshold: float = 0.0, max_diff: float = 0.05, min_agreement: float = 0.8) -> Path:
    """A protocol for the 30-input test slice, written to path: the demo's metric tolerance unless told otherwise;
    label agreement 0.8, what 30 inputs can show (30 of 30 agreeing: 95 % lower bound 0.884, not the demo's 0.97)."""
    path.write_text(PROTOCOL_TEMPLATE.format(threshold=threshold, max_diff=max_diff, min_agreement=min_agreement))
    return path


def migrate_store(folder: Path) -> Path:
    """An empty SQLite store in folder with every MLflow schema migration run (over a second of work, done once)."""
    path = folder / "mlflow.db"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(folder)
        MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments(max_results=1)
    return path


def use_store(folder: Path, monkeypatch: pytest.MonkeyPatch, migrated: Path) -> str:
    """Point this process and its children at a fresh SQLite store in folder, a copy of the migrated one, and work
    from folder; returns its URI. The copy's Default experiment keeps its artifacts in folder, as a new store would."""
    path = folder / "mlflow.db"
    shutil.copyfile(migrated, path)
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE experiments SET artifact_location = replace(artifact_location, ?, ?) "
                           "WHERE experiment_id = 0", (str(migrated.parent), str(folder)))
    uri = f"sqlite:///{path}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    for name in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUCOST_SPOOL", str(folder / "spool"))
    monkeypatch.chdir(folder)
    mlflow.set_tracking_uri(uri)
    return uri


def release_stores() -> None:
    """Close and forget the SQL stores MLflow opened in this process (its tracking and model-registry caches): a
    later call opens them again, as a new process would."""
    for module, cls in (("mlflow.store.tracking.sqlalchemy_store", "SqlAlchemyStore"),
                        ("mlflow.store.model_registry.sqlalchemy_store", "SqlAlchemyStore"),
                        ("mlflow.tracking._tracking_service.registry", "TrackingStoreRegistry"),
                        ("mlflow.tracking._model_registry.registry", "ModelRegistryStoreRegistry")):
        found = getattr(sys.modules.get(module), cls, None)
        for uri in list(getattr(found, "_engine_map", {})):
            found._engine_map.pop(uri).dispose()
        if hasattr(found, "_get_store_with_resolved_uri"):
            found._get_store_with_resolved_uri.cache_clear()


def pass_args(corpus: Path, model: Path, protocol: Path, variant: str = "batch8", *extra: str,
              variants: Path = VARIANTS, experiment: str = "t") -> list[str]:
    """The arguments of `gpucost pass` on a corpus file, as a user types them."""
    return ["pass", "--variant", variant, "--corpus", str(corpus), "--model", str(model), "--variants", str(variants),
            "--experiment", experiment, "--protocol", str(protocol), *extra]


def run_pass(corpus: Path, model: Path, protocol: Path, variant: str = "batch8", *extra: str,
             variants: Path = VARIANTS, experiment: str = "t") -> Result:
    """`gpucost pass` through the CLI in this process; the pass itself runs in the launcher's child."""
    return CliRunner().invoke(main, pass_args(corpus, model, protocol, variant, *extra, variants=variants,
                                              experiment=experiment))


def only_run(experiment: str = "t", tracking_uri: str | None = None) -> Run:
    """The one run of the experiment (fails when there is none or more than one)."""
    client = MlflowClient(tracking_uri=tracking_uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return run


def evidence_of(experiment: str, client: MlflowClient | None = None, now=None):
    """What a report reads of the named experiment in the current store, read once (tracking/evidence.py)."""
    from gpucost_mlflow.tracking import evidence, experiments

    client = client or MlflowClient()
    return evidence.read(client, experiments.named(client, experiment), now)


def attempts_table(experiment: str, client: MlflowClient | None = None, now=None):
    """The named experiment's attempts table, as `gpucost attempts` reads it."""
    from gpucost_mlflow.tracking import experiments, reader
    from gpucost_mlflow.tracking.attempts_table import frame

    client = client or MlflowClient()
    return frame(reader.attempts(client, experiments.named(client, experiment), now))


def log_report(report, paths: dict, client: MlflowClient | None = None) -> str:
    """Log a built report's decision run as `gpucost report` does (its campaigns read from the store); its id."""
    from gpucost_mlflow.report.decided import decided
    from gpucost_mlflow.tracking import decision_run

    client = client or MlflowClient()
    found = evidence_of(report.experiment, client)
    return decision_run.log_decision(client, found.experiment.id, decided(report, paths, found.campaigns))


def load_benchmark(name: str) -> ModuleType:
    """A script of benchmarks/ (not a package) as a module, so a test runs its parts as the script does."""
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"benchmarks_{name}"] = module  # a dataclass resolves its module's names through sys.modules
    spec.loader.exec_module(module)
    return module


def checks_of(run: Run) -> dict[str, str]:
    """A pass's checks as its verdict.json records them: name -> 'pass: reason' or 'fail: reason'."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="verdict.json",
                                                   dst_path=folder)
        verdict = json.loads(Path(path).read_text(encoding="utf-8"))
    return {c["name"]: f"{'pass' if c['passed'] else 'fail'}: {c['reason']}" for c in verdict["checks"]}


TOY_LAUNCH = '''
"""A test kind for the launcher: a made-up model section named NAME; the protocol's labels, which the corpus carries."""
from gpucost_mlflow.core.kinds.base import Described


def default_model(root):
    return root


def describe(workload, variant, model_path, protocol, record):
    labels = list(protocol.labels)
    return Described(workload, {"path": str(model_path), "revision": "NAME-1", "tokenizer_revision": "",
                                "labels": labels, "architecture": "NAME", "sources": [], "trained_on": {}},
                     record, labels)
'''


def toy_launch(name: str) -> str:
    """The `launch.py` of a test kind outside the package (tests/test_toy_workload.py, tests/test_toy_output.py)."""
    return TOY_LAUNCH.replace("NAME", name)
