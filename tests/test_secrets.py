"""Secrets never reach the tracking store: no environment value in any param, tag, metric name or artifact."""

from __future__ import annotations

import gzip
from pathlib import Path

import mlflow
from click.testing import CliRunner
from conftest import ROOT
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main

PLANTED = {
    "HF_TOKEN": "hf_planted_token_5d1e9c",
    "AWS_SECRET_ACCESS_KEY": "planted-secret-key-77ab",
    "MY_API_KEY": "planted-api-key-0c3f",
    "DB_PASSWORD": "planted-password-91ee",
    "MLFLOW_TRACKING_PASSWORD": "planted-mlflow-pass-4411",
}


def test_planted_secrets_appear_in_no_param_tag_or_artifact(store, corpus_dir, model_dir, protocol_file, monkeypatch, tmp_path):
    for key, value in PLANTED.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(main, [
        "pass", "--variant", "batch8", "--corpus", str(corpus_dir / "comparison.jsonl"), "--model", str(model_dir),
        "--variants", str(ROOT / "projects" / "variants.yaml"), "--experiment", "t", "--protocol", str(protocol_file)])
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    run = client.search_runs([mlflow.get_experiment_by_name("t").experiment_id])[0]
    texts = [*run.data.params.items(), *run.data.tags.items(), *run.data.metrics.keys()]
    texts += [str(item) for item in client.get_experiment(run.info.experiment_id).tags.items()]
    target = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, dst_path=str(tmp_path / "a")))
    for path in target.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            texts.append(gzip.decompress(data).decode("utf-8", "replace") if path.suffix == ".gz" else data.decode("utf-8", "replace"))
    blob = "\n".join(str(t) for t in texts)
    for key, value in PLANTED.items():
        assert value not in blob, f"the value of {key} reached the tracking store"
