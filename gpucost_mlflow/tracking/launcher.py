"""The pass launcher: validate inputs, open the MLflow run, record the manifest, run the child, record the attempt.

Nothing is recorded before every input is valid; after the run opens, every ending (accepted,
rejected, failed, interrupted) is written as one attempt and the run is closed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core import verdicts
from gpucost_mlflow.core.corpus import read_corpus
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fingerprints import sha256_file
from gpucost_mlflow.core.manifest import build_manifest
from gpucost_mlflow.core.quality import evaluate
from gpucost_mlflow.core.variants import Variant
from gpucost_mlflow.execution import environment, faults, models, runner
from gpucost_mlflow.tracking import schema

CHILD_GRACE_S = 60


@dataclass
class PassRequest:
    """What the user asked for, paths already resolved."""

    variant: Variant
    corpus_path: Path
    model_path: Path
    experiment: str
    role: str = "benchmark"
    campaign_id: str = ""
    pass_index: str = ""
    code_root: Path = Path(".")


@dataclass
class PassResult:
    run_id: str
    status: str
    reason: str
    metrics: dict


def corpus_metadata(corpus_path: Path) -> dict:
    """The builder's metadata next to the corpus file (sources, bucket bounds), empty for a user's own file."""
    meta_path = corpus_path.parent / "corpus.json"
    if not meta_path.exists():
        return {}
    try:
        return json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError:
        raise GpucostError(f"{meta_path}: not valid JSON") from None


def prepare(request: PassRequest) -> tuple[dict, object]:
    """Check every input and assemble the manifest; raises GpucostError before anything is recorded."""
    if request.role not in schema.ROLES:
        raise GpucostError(f"unknown role '{request.role}'; valid roles: {', '.join(schema.ROLES)}")
    faults.parse(os.environ.get(faults.ENV, ""))
    model = models.describe_model(request.model_path)
    corpus = read_corpus(request.corpus_path, labels=model.labels)
    meta = corpus_metadata(request.corpus_path)
    device = models.resolve_device(request.variant.device)
    import torch

    corpus_record = {
        "path": str(request.corpus_path.resolve()),
        "file_sha256": sha256_file(request.corpus_path),
        "fingerprint": corpus.fingerprint,
        "order_digest": corpus.order_digest,
        "size": len(corpus.rows),
        "labels": corpus.labels,
        "buckets": meta.get("buckets", {}).get("bounds_tokens", {}),
        "bucket_tokenizer": meta.get("buckets", {}).get("tokenizer_revision", ""),
        "sources": meta.get("sources", []),
    }
    model_record = {
        "path": model.path,
        "revision": model.revision,
        "tokenizer_revision": model.tokenizer_revision,
        "labels": model.labels,
        "architecture": model.architecture,
        "sources": model.provenance.get("sources", []),
        "trained_on": model.provenance.get("tuning_corpus", {}),
    }
    stack = environment.stack(device)
    stack["compilation"] = "torch.compile" if request.variant.compile else "none (eager)"
    stack["attention_backend"] = request.variant.attention
    manifest = build_manifest(
        variant=request.variant,
        corpus=corpus_record,
        model=model_record,
        stack=stack,
        code=environment.code_version(request.code_root),
        dependencies=environment.package_versions(),
        warmup=dict(runner.WARMUP_RULE),
        seeds={
            "torch": runner.SEED,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        },
        run={"role": request.role, "campaign_id": request.campaign_id, "pass_index": request.pass_index},
    )
    return manifest, corpus


def _start_run(experiment: str, run_name: str):
    if os.environ.get("MLFLOW_RUN_ID"):
        return mlflow.start_run()
    mlflow.set_experiment(experiment)
    return mlflow.start_run(run_name=run_name)


def _log_dataset(corpus, manifest: dict) -> None:
    import pandas as pd

    frame = pd.DataFrame(corpus.rows, columns=["id", "text", "label", "bucket"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = mlflow.data.from_pandas(
            frame,
            source=manifest["corpus"]["path"],
            targets="label",
            name=Path(manifest["corpus"]["path"]).stem,
            digest=corpus.fingerprint[:16],
        )
    mlflow.log_input(dataset, context=schema.DATASET_CONTEXT)


def _run_child(spec: runner.PassSpec, workdir: Path) -> tuple[int, bool]:
    """Run the pass's child process; returns (return code, whether the launcher was interrupted)."""
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec.__dict__), encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    child = subprocess.Popen([sys.executable, "-m", "gpucost_mlflow.execution.runner", str(spec_path)], env=env)
    interrupted = False
    while True:
        try:
            return child.wait(), interrupted
        except KeyboardInterrupt:
            interrupted = True
            child.send_signal(signal.SIGINT)
            try:
                return child.wait(timeout=CHILD_GRACE_S), interrupted
            except subprocess.TimeoutExpired:
                child.kill()


def _child_outcome(workdir: Path, returncode: int, interrupted: bool) -> dict:
    outcome_path = workdir / runner.OUTCOME
    if outcome_path.exists():
        outcome = json.loads(outcome_path.read_text(encoding="utf-8"))
    else:
        outcome = {"status": "failed", "completed_entries": None}
        if returncode < 0:
            name = signal.Signals(-returncode).name
            outcome["reason"] = f"killed by signal {name}"
        else:
            outcome["reason"] = f"child exited with code {returncode} without an outcome"
        outcome["completed_entries_reason"] = "child died before reporting"
    if interrupted and outcome["status"] != "completed":
        outcome["reason"] = "interrupted"
    return outcome


def execute(request: PassRequest) -> PassResult:
    """One pass = one MLflow run, ending as accepted, rejected or failed."""
    manifest, corpus = prepare(request)
    client = MlflowClient()
    with tempfile.TemporaryDirectory(prefix="gpucost-pass-") as temp, _start_run(request.experiment, request.variant.name) as run:
        run_id = run.info.run_id
        workdir = Path(temp)
        manifest["run"].update(run_id=run_id, experiment_id=run.info.experiment_id)
        client.log_batch(
            run_id,
            params=[Param(k, v) for k, v in schema.params_from_manifest(manifest).items()],
            tags=[RunTag(k, v) for k, v in _tags(request, manifest).items()],
        )
        (workdir / schema.MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
        mlflow.log_artifact(str(workdir / schema.MANIFEST))
        (workdir / schema.ENVIRONMENT).write_text(environment.all_distributions(), encoding="utf-8")
        mlflow.log_artifact(str(workdir / schema.ENVIRONMENT))
        _log_dataset(corpus, manifest)

        spec = runner.PassSpec(
            corpus_path=str(request.corpus_path.resolve()),
            model_path=str(request.model_path.resolve()),
            workdir=str(workdir),
            settings=request.variant.settings(),
            fault=os.environ.get(faults.ENV, ""),
        )
        returncode, interrupted = _run_child(spec, workdir)
        outcome = _child_outcome(workdir, returncode, interrupted)

        eval_started = time.perf_counter_ns()
        back = verdicts.read_predictions(workdir / schema.PREDICTIONS, manifest["model"]["labels"])
        checks, counts = verdicts.basic_checks(corpus.ids, back)
        quality = evaluate(corpus.rows, back.labels, manifest["model"]["labels"])
        eval_s = (time.perf_counter_ns() - eval_started) / 1e9

        status, reason = _status(outcome, checks)
        metrics = {key: outcome[key] for key in schema.TIMINGS if outcome.get(key) is not None}
        metrics["eval_s"] = eval_s
        metrics.update(expected_ids=counts["expected_ids"], observed_ids=counts["observed_ids"])
        if outcome.get("completed_entries") is not None:
            metrics["completed_entries"] = outcome["completed_entries"]
        if outcome.get("elapsed_until_failure_s") is not None:
            metrics["elapsed_until_failure_s"] = outcome["elapsed_until_failure_s"]
        metrics.update((outcome.get("memory") or {}).get("metrics", {}))
        if back.ids:
            metrics.update(quality)
        verdict = {
            "status": status,
            "reason": reason,
            "corpus_accepted": status == "accepted",
            "checks": [check.record() for check in checks],
            "ids": counts,
            "quality": quality if back.ids else {},
            "missing_measurements": _missing(outcome, metrics),
            "memory_counter": (outcome.get("memory") or {}).get("counter", ""),
            "deterministic": outcome.get("deterministic", {}),
        }
        now = int(time.time() * 1000)
        client.log_batch(
            run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
            tags=[
                RunTag(schema.STATUS, status),
                RunTag(schema.STATUS_REASON, reason[:5000]),
                RunTag(schema.CORPUS_ACCEPTED, str(status == "accepted").lower()),
                RunTag(schema.IDS_MATCH, str(_check(checks, "ids")).lower()),
                RunTag(schema.MEMORY_COUNTER, verdict["memory_counter"]),
            ],
        )
        (workdir / schema.VERDICT).write_text(json.dumps(verdict, indent=2), encoding="utf-8")
        for name in (schema.VERDICT, schema.PREDICTIONS):
            if (workdir / name).exists():
                mlflow.log_artifact(str(workdir / name))
        if outcome.get("error") or status == "failed":
            (workdir / schema.ERROR).write_text(outcome.get("error") or reason, encoding="utf-8")
            mlflow.log_artifact(str(workdir / schema.ERROR))
        if status == "failed":
            mlflow.end_run(status="KILLED" if interrupted else "FAILED")
    if interrupted:
        raise KeyboardInterrupt
    return PassResult(run_id, status, reason, metrics)


def _tags(request: PassRequest, manifest: dict) -> dict[str, str]:
    stack = manifest["stack"]
    tags = {
        schema.ROLE: request.role,
        schema.VARIANT: request.variant.name,
        schema.STATUS: "running",
        schema.LAUNCHER: f"{socket.gethostname()}:{os.getpid()}",
        schema.DEVICE_NAME: ", ".join(stack["device_names"]),
        schema.BACKEND: stack["backend"],
        schema.CORPUS_FINGERPRINT: manifest["corpus"]["fingerprint"],
    }
    if request.campaign_id:
        tags[schema.CAMPAIGN_ID] = request.campaign_id
    if request.pass_index:
        tags[schema.PASS_INDEX] = request.pass_index
    return tags


def _check(checks: list, name: str) -> bool:
    return any(check.name == name and check.passed for check in checks)


def _status(outcome: dict, checks: list) -> tuple[str, str]:
    if outcome["status"] != "completed":
        return "failed", outcome.get("reason") or "failed without a reason"
    failed = [check for check in checks if not check.passed]
    if failed:
        return "rejected", "; ".join(f"{c.name}: {c.reason}" for c in failed)
    return "accepted", "every check passed"


def _missing(outcome: dict, metrics: dict) -> dict[str, str]:
    """Measurements absent from this attempt, each with its reason (never a zero)."""
    why = outcome.get("reason") or "not measured"
    missing = {key: f"not measured: {why}" for key in schema.TIMINGS if key not in metrics}
    if "completed_entries" not in metrics:
        missing["completed_entries"] = outcome.get("completed_entries_reason", why)
    return missing
