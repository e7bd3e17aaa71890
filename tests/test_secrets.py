"""Secrets never reach the tracking store: no environment value in any param, tag, metric name or artifact."""

from __future__ import annotations

import gzip
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from tests.helpers import only_run, run_pass

pytestmark = pytest.mark.integration

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
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    run = only_run()
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
