"""`mlflow run projects -P variant=... --env-manager local` leaves one FINISHED pass run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT
from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import schema


def test_mlflow_run_main_entry_point_records_one_finished_pass(store, corpus_dir, model_dir, protocol_file):
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    result = subprocess.run(check=False, args=
        [os.path.join(bin_dir, "mlflow"), "run", str(ROOT / "projects"), "-P", "variant=batch4",
         "-P", f"model={model_dir}", "-P", f"corpus={corpus_dir / 'comparison.jsonl'}", "-P", f"protocol={protocol_file}",
         "--env-manager", "local", "--experiment-name", "project"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("project").experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags[schema.STATUS] == "accepted" and run.data.tags[schema.VARIANT] == "batch4"
    assert run.data.params["variant"] == "batch4" and run.data.params["setting.batch_size"] == "4"
    assert run.inputs.dataset_inputs and run.data.metrics["pass_s"] > 0


def test_unknown_variant_through_mlflow_run_leaves_no_run_running(store, corpus_dir, model_dir):
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    result = subprocess.run(check=False, args=
        [os.path.join(bin_dir, "mlflow"), "run", str(ROOT / "projects"), "-P", "variant=nope",
         "--env-manager", "local", "--experiment-name", "project"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode != 0
    assert "unknown variant 'nope'; valid variants: batch1" in result.stderr
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("project").experiment_id])
    assert all(run.info.status != "RUNNING" for run in runs)
