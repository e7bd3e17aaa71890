"""The heartbeat of a running pass (docs/pass.md): written by the launcher's thread, read back so that a pass left
RUNNING on any host reads as interrupted once its heartbeat is older than three intervals."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time

import pytest
from click.testing import CliRunner
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.campaign import schedule
from gpucost_mlflow.tracking import heartbeat, schema, writer
from tests.helpers import attempts_table, only_run, run_pass
from tests.scenario import B200, EXPERIMENT

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
YEAR_AGO = NOW - dt.timedelta(days=365)


def running_pass(*, started: dt.datetime, beat: dt.datetime | None, host: str = "host-b", launcher: str = "host-b:4242",
                 interval: str | None = None) -> str:
    """A pass opened with the writer's start tags by a launcher elsewhere, never ended; returns its run id."""
    client = MlflowClient()
    tags = writer.start_tags(role="benchmark", variant="batch8", basis=writer.Basis(B200, "cuda", "a" * 64, "d" * 64))
    tags.update({schema.HOST: host, schema.LAUNCHER: launcher})
    if beat is None:
        del tags[schema.HEARTBEAT]  # a run written before heartbeats existed
        del tags[schema.HEARTBEAT_INTERVAL]
    else:
        tags[schema.HEARTBEAT] = heartbeat.stamp(beat)
    if interval is not None:
        tags[schema.HEARTBEAT_INTERVAL] = interval
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    run = client.create_run(experiment_id, tags=tags, start_time=int(started.timestamp() * 1000))
    assert client.get_run(run.info.run_id).info.status == "RUNNING"
    return run.info.run_id


def row(run_id: str, now: dt.datetime | None = None) -> dict:
    table = attempts_table(EXPERIMENT, now=now)
    return table.set_index("run_id").loc[run_id].to_dict()


@pytest.mark.unit
def test_a_pass_opens_with_its_first_heartbeat_and_the_writers_interval():
    tags = writer.start_tags(role="benchmark", variant="batch8", basis=writer.Basis(B200, "cuda", "a" * 64, "d" * 64))
    assert tags[schema.HEARTBEAT_INTERVAL] == "60" and heartbeat.INTERVAL_S == 60
    beat = dt.datetime.fromisoformat(tags[schema.HEARTBEAT])
    assert beat.utcoffset() == dt.timedelta(0) and beat.microsecond == 0
    assert heartbeat.stamp(dt.datetime(2025, 12, 1, 11, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1)))) \
        == "2025-12-01T10:00:00+00:00"


@pytest.mark.unit
def test_a_year_old_running_pass_from_another_host_reads_as_interrupted_with_its_last_heartbeat(experiment):
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    last = now - dt.timedelta(days=365)
    stale = running_pass(started=last - dt.timedelta(minutes=5), beat=last)

    found = row(stale)  # judged at the current time
    assert found["status"] == "failed"
    assert found["reason"] == (f"interrupted (no heartbeat since {heartbeat.stamp(last)}, more than 3 x 60 s ago; "
                               "launcher host-b:4242)")
    assert f"failed: {found['reason']}" in found["notes"]
    table = CliRunner().invoke(main, ["attempts", "--experiment", EXPERIMENT, "--format", "csv"])
    assert table.exit_code == 0 and "interrupted (no heartbeat since" in table.stdout
    # A campaign's resume runs such a slot again (status failed, reason "interrupted ...").
    (todo,) = schedule.remaining([schedule.Slot(1, 1, 1, "batch8")], {"1-1": [found | {"run_id": stale}]})
    assert todo[1].needs_run and todo[1].retry_of == stale


@pytest.mark.unit
def test_a_running_pass_written_before_heartbeats_is_judged_by_its_start_time(experiment):
    old = running_pass(started=YEAR_AGO, beat=None)
    assert row(old, NOW)["reason"] == ("interrupted (no heartbeat since its start at 2025-12-01T12:00:00+00:00, more "
                                       "than 3 x 60 s ago; launcher host-b:4242)")
    recent = running_pass(started=NOW - dt.timedelta(minutes=2), beat=None)
    assert row(recent, NOW)["status"] == "running"


@pytest.mark.unit
def test_a_running_pass_with_a_fresh_heartbeat_from_another_host_stays_running(experiment):
    alive = running_pass(started=YEAR_AGO, beat=NOW - dt.timedelta(seconds=170))
    found = row(alive, NOW)
    assert (found["status"], found["reason"]) == ("running", "")
    assert row(alive, NOW + dt.timedelta(seconds=10))["status"] == "running"  # exactly three intervals
    assert row(alive, NOW + dt.timedelta(seconds=11))["status"] == "failed"


@pytest.mark.unit
def test_the_interval_the_writer_declared_is_the_one_read(experiment):
    slow = running_pass(started=YEAR_AGO, beat=NOW - dt.timedelta(minutes=20), interval="600")
    assert row(slow, NOW)["status"] == "running"
    assert "more than 3 x 600 s ago" in row(slow, NOW + dt.timedelta(minutes=11))["reason"]


@pytest.mark.unit
def test_a_dead_launcher_on_this_host_is_interrupted_whatever_its_heartbeat(experiment):
    host = socket.gethostname()
    gone = running_pass(started=NOW, beat=dt.datetime.now(dt.timezone.utc), host=host, launcher=f"{host}:{2 ** 30}")
    assert row(gone)["reason"] == "interrupted (launcher gone, run left RUNNING)"


@pytest.mark.unit
def test_the_heartbeat_thread_writes_the_tag_and_stops(store):
    client = MlflowClient()
    run_id = client.create_run(client.create_experiment("beats")).info.run_id
    beat = heartbeat.Heartbeat(client, run_id, interval_s=0.05).start()
    assert beat.alive
    deadline = time.monotonic() + 30
    while schema.HEARTBEAT not in client.get_run(run_id).data.tags and time.monotonic() < deadline:
        time.sleep(0.05)
    beat.stop()
    assert not beat.alive
    written = dt.datetime.fromisoformat(client.get_run(run_id).data.tags[schema.HEARTBEAT])
    assert abs(dt.datetime.now(dt.timezone.utc) - written) < dt.timedelta(minutes=5)
    client.set_tag(run_id, schema.HEARTBEAT, "stopped")
    time.sleep(0.3)  # six intervals: a thread still beating would have written again
    assert client.get_run(run_id).data.tags[schema.HEARTBEAT] == "stopped"
    beat.stop()  # twice is harmless


@pytest.mark.unit
def test_a_store_error_inside_the_heartbeat_thread_is_swallowed():
    class Unreachable:
        def __init__(self):
            self.calls = 0
            self.twice = threading.Event()

        def set_tag(self, run_id, key, value):
            self.calls += 1
            if self.calls >= 2:
                self.twice.set()
            raise MlflowException("API request failed: Connection refused") if self.calls % 2 else ConnectionError()

    client = Unreachable()
    beat = heartbeat.Heartbeat(client, "r1", interval_s=0.01).start()
    assert client.twice.wait(30)  # it kept beating after the first error
    beat.stop()
    assert not beat.alive


@pytest.mark.integration
def test_a_real_pass_beats_from_the_launcher_and_stops_when_its_attempt_is_recorded(store, corpus_dir, model_dir,
                                                                                     protocol_file, monkeypatch):
    beats = []

    def counted(now=None):
        if threading.current_thread().name.startswith("gpucost-heartbeat-"):
            beats.append(threading.current_thread().name)
        return stamp(now)

    stamp = heartbeat.stamp
    monkeypatch.setattr(heartbeat, "INTERVAL_S", 0.05)
    monkeypatch.setattr(heartbeat, "stamp", counted)
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 0, result.output
    run = only_run()
    assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] == "accepted"
    assert run.data.params[schema.HEARTBEAT_INTERVAL] == "0.05"  # a fact: a param
    assert beats and set(beats) == {f"gpucost-heartbeat-{run.info.run_id}"}  # the launcher's thread, during the pass
    assert schema.HEARTBEAT not in run.data.tags  # a finished run shows no sign of life: publishing removed it
    shown = [key for key in run.data.tags if key.startswith("gpucost.")]
    assert len(shown) <= 8, shown  # the facts are params (tests/test_pass_tags.py)
    assert not [t for t in threading.enumerate() if t.name.startswith("gpucost-heartbeat-") and t.is_alive()]
