"""Team scale against a real server: PostgreSQL behind `mlflow server` with basic auth and proxied artifacts.

The module starts PostgreSQL (Debian's packages) and one MLflow server on 127.0.0.1, kills and
restarts that server for the outage test, and stops both at the end.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.tracking import schema, spool
from tests.helpers import VARIANTS, attempts_table, pass_args, write_protocol
from tests.servers import MlflowServer, start_postgres

pytestmark = pytest.mark.integration

GPUCOST = str(Path(sys.executable).parent / "gpucost")
ADMIN_PASSWORD = "adm1n-Pa55-planted-7f3c"


@pytest.fixture(scope="module")
def postgres():
    cluster = start_postgres()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def server(postgres, tmp_path_factory):
    running = MlflowServer(postgres.uri, tmp_path_factory.mktemp("server"), auth_password=ADMIN_PASSWORD).start()
    yield running
    running.stop()


@pytest.fixture
def team_env(server, tmp_path, monkeypatch):
    """This process and its subprocesses log to the PostgreSQL-backed server as admin; one core per pass."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", ADMIN_PASSWORD)
    monkeypatch.setenv("GPUCOST_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    for name in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(server.uri)
    yield dict(os.environ)
    mlflow.set_tracking_uri(None)


def _pass_cmd(corpus_dir, model_dir, protocol, experiment, variant="batch8"):
    return [GPUCOST, *pass_args(corpus_dir / "comparison.jsonl", model_dir, protocol, variant, experiment=experiment)]


def _campaign_cmd(corpus_dir, model_dir, protocol, experiment, *extra):
    return [GPUCOST, "campaign", "--variants", "batch8", "--corpus", str(corpus_dir / "comparison.jsonl"),
            "--model", str(model_dir), "--variants-file", str(VARIANTS), "--protocol", str(protocol),
            "--experiment", experiment, *extra]


def test_four_concurrent_passes_all_arrive_with_postgres_behind_the_server(team_env, postgres, corpus_dir, model_dir,
                                                                           protocol_file):
    import psycopg

    processes = [
        subprocess.Popen(_pass_cmd(corpus_dir, model_dir, protocol_file, "team-concurrent"), env=team_env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=600) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, [err[-1500:] for _, err in outputs]

    client = MlflowClient()
    experiment = client.get_experiment_by_name("team-concurrent")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 4
    for run in runs:
        assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] == "accepted"
        assert "pass_s" in run.data.metrics and run.data.metrics["observed_ids"] == 30
        names = {item.path for item in client.list_artifacts(run.info.run_id)}
        assert {schema.MANIFEST, schema.ENVIRONMENT, schema.VERDICT, schema.PREDICTIONS} <= names
        folder = Path(client.download_artifacts(run.info.run_id, "", str(Path.cwd() / run.info.run_id)))
        with gzip.open(folder / schema.PREDICTIONS, "rt", encoding="utf-8") as handle:
            assert len(handle.read().splitlines()) == 30
        _assert_password_nowhere(run, experiment, folder)
    assert all(ADMIN_PASSWORD not in out + err for out, err in outputs)

    with psycopg.connect(f"host=127.0.0.1 port={postgres.port} user=gpucost dbname=mlflow") as connection:
        stored = connection.execute(
            "select count(*) from runs r join metrics m on m.run_uuid = r.run_uuid "
            "where r.experiment_id = %s and m.key = 'pass_s'", (int(experiment.experiment_id),)
        ).fetchone()[0]
    table = attempts_table("team-concurrent")
    print(f"concurrent passes: {len(table)} of 4 attempt rows, {stored} of 4 pass_s rows in PostgreSQL")
    assert len(table) == 4 and stored == 4
    assert spool.entries() == []


def _runner_running(launcher_pid: int, folder: Path) -> bool:
    """Whether the launcher's own pass (the measured work) is running: its plain child, or the pass the tests'
    starter forked for it, which works in the launcher's folder (another test's pass, in another pytest worker, does
    not count)."""
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            if b"gpucost_mlflow.execution.forkserver" in command and (entry / "cwd").resolve() == folder.resolve():
                return True  # forked: the supervisor and the starter work elsewhere
            if b"gpucost_mlflow.execution.runner" not in command:
                continue
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == launcher_pid:
            return True
    return False


def test_server_killed_mid_campaign_then_sync_keeps_every_pass_once(team_env, server, corpus_dir, model_dir, tmp_path):
    outage, env = server, team_env
    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 2"))
    try:
        # Each pass of this campaign sleeps 3 s after its first batch, so the loop below sees one running however
        # slowly the server answers it (a forked pass is the process itself, no client standing for it before).
        campaign = subprocess.Popen(_campaign_cmd(corpus_dir, model_dir, protocol, "team-outage"),
                                    env=dict(env, GPUCOST_FAULT="stall@1:3"),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        client = MlflowClient()
        deadline = time.time() + 300
        while time.time() < deadline:
            experiment = client.get_experiment_by_name("team-outage")
            first = experiment and client.search_runs(
                [experiment.experiment_id], filter_string=f"params.`{schema.PASS_INDEX}` = '1'")
            if first and _runner_running(campaign.pid, tmp_path):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the campaign's first pass never started")
        outage.kill()
        _, err = campaign.communicate(timeout=300)
        assert campaign.returncode == 2, err[-2000:]
        assert len(err.strip().splitlines()[-1:]) == 1 and "gpucost sync" in err and "--resume" in err, err[-3000:]
        waiting = spool.entries()
        assert len(waiting) == 1 and waiting[0].record["params"][schema.PASS_INDEX] == "1"
        spooled = waiting[0].record
        campaign_id = spooled["params"][schema.CAMPAIGN_ID]

        outage.start()
        refused = CliRunner().invoke(main, _campaign_cmd(corpus_dir, model_dir, protocol, "team-outage",
                                                         "--resume", campaign_id)[1:])
        assert refused.exit_code == 2 and "gpucost sync" in refused.output, refused.output
        synced = CliRunner().invoke(main, ["sync"])
        assert synced.exit_code == 0 and "1 spooled pass(es) uploaded" in synced.output, synced.output
        again = CliRunner().invoke(main, ["sync"])
        assert again.exit_code == 0 and "nothing to sync" in again.output

        run = client.get_run(spooled["run_id"])
        assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] == "accepted"
        assert run.info.start_time == spooled["start_time"] and run.info.end_time == spooled["end_time"]
        original = {key: (value, stamp) for key, value, stamp, _ in spooled["metrics"]}
        history = client.get_metric_history(run.info.run_id, "pass_s")
        assert [(m.value, m.timestamp) for m in history] == [original["pass_s"]]
        assert history[0].timestamp <= spooled["end_time"]  # stamped when the clock stopped, not at upload

        resumed = subprocess.run(check=False, args=_campaign_cmd(corpus_dir, model_dir, protocol, "team-outage", "--resume", campaign_id),
                                 env=env, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        table = attempts_table("team-outage")
        assert sorted(table["pass_index"]) == ["1", "2"]
        assert list(table["status"]) == ["accepted"] * 2
    finally:
        if outage.process.poll() is not None:
            outage.start()


def test_sync_of_a_pass_the_store_never_saw_creates_one_run_once(team_env, tmp_path):
    record = {
        "target": "http://example.invalid", "experiment_id": "0", "experiment_name": "team-lost",
        "run_id": "0" * 32, "run_name": "batch8", "parent_run_id": "", "start_time": 1_700_000_000_000,
        "end_time": 1_700_000_060_000, "end_status": "FINISHED", "params": {"setting.batch_size": "8"},
        "tags": {schema.VARIANT: "batch8", schema.STATUS: "accepted", schema.ROLE: "benchmark"},
        "metrics": [["pass_s", 12.5, 1_700_000_050_000, 0]], "dataset": None,
    }
    (tmp_path / "verdict.json").write_text("{}")
    for _ in range(2):  # the second time: a sync that uploaded, then died before removing the entry
        spool.write(dict(record, spool_id="lost-pass-1"), [tmp_path / "verdict.json"])
        synced = CliRunner().invoke(main, ["sync"])
        assert synced.exit_code == 0, synced.output
    client = MlflowClient()
    experiment = client.get_experiment_by_name("team-lost")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 and runs[0].info.start_time == record["start_time"]
    assert runs[0].info.end_time == record["end_time"] and runs[0].data.metrics["pass_s"] == 12.5
    assert [item.path for item in client.list_artifacts(runs[0].info.run_id)] == ["verdict.json"]
    assert spool.entries() == []


def test_pass_against_an_unreachable_server_is_one_line_exit_2(tmp_path, corpus_dir, model_dir, protocol_file):
    # How soon it gives up is the store check's budget, tested with a fake clock in test_campaign.py.
    env = dict(os.environ, MLFLOW_TRACKING_URI="http://127.0.0.1:9", GPUCOST_SPOOL=str(tmp_path / "spool"))
    result = subprocess.run(check=False, args=_pass_cmd(corpus_dir, model_dir, protocol_file, "unreachable"), env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "unreachable" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture
def auth_server(server):
    return server


def _auth_env(auth_server, tmp_path, **extra) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_")}
    return dict(env, MLFLOW_TRACKING_URI=auth_server.uri, GPUCOST_SPOOL=str(tmp_path / "spool"),
                OMP_NUM_THREADS="1", **extra)


@pytest.mark.parametrize("command", ["pass", "attempts", "sync-with-spool"])
def test_unauthenticated_use_of_a_basic_auth_server_is_one_line_exit_2(auth_server, command, tmp_path, corpus_dir,
                                                                       model_dir, protocol_file):
    env = _auth_env(auth_server, tmp_path)
    if command == "pass":
        argv = _pass_cmd(corpus_dir, model_dir, protocol_file, "team-auth")
    elif command == "attempts":
        argv = [GPUCOST, "attempts", "--experiment", "team-auth"]
    else:
        os.environ["GPUCOST_SPOOL"] = env["GPUCOST_SPOOL"]
        try:
            spool.write({"run_id": "1" * 32, "start_time": 1, "tags": {}, "params": {}, "metrics": []}, [])
        finally:
            del os.environ["GPUCOST_SPOOL"]
        argv = [GPUCOST, "sync"]
    result = subprocess.run(check=False, args=argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "MLFLOW_TRACKING_USERNAME" in lines[0] and "Traceback" not in result.stderr


def test_wrong_password_is_refused_in_one_line(auth_server, tmp_path, corpus_dir, model_dir, protocol_file):
    env = _auth_env(auth_server, tmp_path, MLFLOW_TRACKING_USERNAME="admin", MLFLOW_TRACKING_PASSWORD="wrong")
    result = subprocess.run(check=False, args=_pass_cmd(corpus_dir, model_dir, protocol_file, "team-auth"), env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "refused the credentials of user 'admin'" in result.stderr
    assert ADMIN_PASSWORD not in result.stderr and "wrong" not in result.stderr


def _assert_password_nowhere(run, experiment, folder: Path) -> None:
    """The basic-auth password the pass ran with is in no param, tag or artifact."""
    assert ADMIN_PASSWORD not in json.dumps([run.data.params, run.data.tags, experiment.tags])
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            assert ADMIN_PASSWORD.encode() not in data, path.name
