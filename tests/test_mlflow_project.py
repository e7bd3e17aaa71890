"""`mlflow run projects -P variant=...`, typed as the README gives it, leaves one FINISHED pass run without conda, on the
protocol's own corpus, in the experiment `gpucost attempts` reads by default."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.tracking import schema

ROOT = Path(__file__).resolve().parents[1]
BIN_DIR = str(Path(sys.executable).parent)


def _pyenv_missing_reason() -> str:
    """Why MLflow's default virtualenv manager cannot build the project's environment offline here; '' when it can."""
    pyenv = shutil.which("pyenv")
    if not pyenv:
        return "the default virtualenv manager needs pyenv (README: what each env manager needs)"
    version = platform.python_version()
    if subprocess.run([pyenv, "prefix", version], capture_output=True, check=False).returncode != 0:
        return f"pyenv has no Python {version}: the virtualenv manager would download and build it"
    return ""


def _mlflow_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`mlflow run projects ARGS` with the project's venv first on PATH, as after `. .venv/bin/activate`."""
    env = dict(env or os.environ)
    env["PATH"] = BIN_DIR + os.pathsep + env["PATH"]
    return subprocess.run(
        [os.path.join(BIN_DIR, "mlflow"), "run", str(ROOT / "projects"), *args],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def test_literal_mlflow_run_records_one_finished_pass_without_conda(
        store, corpus_dir, model_dir, protocol_file, tmp_path):
    reason = _pyenv_missing_reason()
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, MLFLOW_ENV_ROOT=str(tmp_path / "mlflow-envs"))
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not shutil.which("conda", path=p))
    protocol = tmp_path / "protocol.yaml"  # names the test corpus: no -P corpus, the protocol's file is the default
    protocol.write_text(protocol_file.read_text().replace("file: comparison.jsonl",
                                                          f"file: {corpus_dir / 'comparison.jsonl'}"))
    result = _mlflow_run("-P", "variant=batch4", "-P", f"model={model_dir}", "-P", f"protocol={protocol}", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    attempts = CliRunner().invoke(main, ["attempts", "--format", "csv", "--protocol", str(protocol)])  # no --experiment
    assert attempts.exit_code == 0 and len(attempts.output.splitlines()) == 2 and "batch4" in attempts.output
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("Default").experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags["mlflow.project.env"] == "virtualenv"
    assert run.data.tags[schema.STATUS] == "accepted" and run.data.tags[schema.VARIANT] == "batch4"
    assert run.data.params["variant"] == "batch4" and run.data.params["setting.batch_size"] == "4"
    assert run.inputs.dataset_inputs and run.data.metrics["pass_s"] > 0


def test_unknown_variant_through_mlflow_run_leaves_no_run_running(store):
    result = _mlflow_run("-P", "variant=nope", "--env-manager", "local", "--experiment-name", "project")
    assert result.returncode != 0
    assert "unknown variant 'nope'; valid variants: batch1" in result.stderr
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("project").experiment_id])
    assert all(run.info.status != "RUNNING" for run in runs)


def test_mlflow_run_from_the_venvs_bin_without_activating_it_finds_the_checkouts_gpucost(
        store, corpus_dir, model_dir, protocol_file, tmp_path):
    # `.venv/bin/mlflow run projects -P variant=... --env-manager local` typed with the venv not activated: no gpucost
    # on PATH, so projects/gpucost.sh runs the checkout's .venv/bin/gpucost (issue 61: "gpucost: command not found").
    if not (ROOT / ".venv" / "bin" / "gpucost").exists():
        pytest.skip("no .venv in this checkout: the fallback has nothing to find")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not shutil.which("gpucost", path=p))
    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(protocol_file.read_text().replace("file: comparison.jsonl",
                                                          f"file: {corpus_dir / 'comparison.jsonl'}"))
    result = subprocess.run(
        [os.path.join(BIN_DIR, "mlflow"), "run", str(ROOT / "projects"), "-P", "variant=batch4", "-P",
         f"model={model_dir}", "-P", f"protocol={protocol}", "--env-manager", "local"],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    (run,) = MlflowClient().search_runs([MlflowClient().get_experiment_by_name("Default").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] == "accepted"
