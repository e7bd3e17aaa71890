"""Campaigns (PROTOCOL §5): rotated order, nested runs, resume after Ctrl-C, a store that must answer first."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
import types
import urllib.error
from pathlib import Path

import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.cli.progress import CampaignProgress
from gpucost_mlflow.core.campaign.schedule import remaining, rotated
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.report.build import build
from gpucost_mlflow.tracking import experiments, schema
from gpucost_mlflow.tracking import store as tracking_store
from tests.helpers import ROOT, VARIANTS, attempts_table, evidence_of, write_protocol


@pytest.mark.unit
def test_rotation_shifts_the_order_by_one_each_round():
    slots = rotated(["batch1", "batch4", "batch8"], 5)
    rounds = [[s.variant[5:] for s in slots if s.round == r] for r in range(1, 6)]
    assert rounds == [["1", "4", "8"], ["4", "8", "1"], ["8", "1", "4"], ["1", "4", "8"], ["4", "8", "1"]]
    assert [s.index for s in slots] == list(range(1, 16))
    assert {s.key for s in slots if s.variant == "batch8"} == {"1-3", "2-2", "3-1", "4-3", "5-2"}


@pytest.mark.unit
def test_resume_runs_missing_and_interrupted_slots_only_never_a_failed_one():
    slots = rotated(["a", "b"], 2)
    done = {
        "1-1": [{"status": "accepted", "reason": "", "run_id": "r1"}],
        "1-2": [{"status": "failed", "reason": "out of memory", "run_id": "r2"}],
        "2-1": [{"status": "failed", "reason": "interrupted", "run_id": "r3"}],
    }
    todo = remaining(slots, done)
    assert [(slot.key, state.retry_of, state.attempts) for slot, state in todo] == [("2-1", "r3", 1), ("2-2", "", 0)]


@pytest.mark.unit
def test_progress_is_plain_lines_when_not_a_tty():
    stream = io.StringIO()
    progress = CampaignProgress(stream)
    display = progress.display()
    display.on_plan("c1", 2, 2)
    slot = rotated(["batch1"], 1)[0]
    display.on_pass_start(slot, 4, None)

    class Result:
        status, metrics = "accepted", {"pass_s": 1.5}

    display.on_pass_end(slot, Result())
    progress.close()
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert text.splitlines() == ["campaign c1: 2 of 2 scheduled passes to run", "[1/2] round 1 position 1 batch1: accepted, pass_s 1.50"]
    assert "pass 1/2 done" in progress.line() and "remaining" in progress.line()
    display.on_pass_end(slot, types.SimpleNamespace(status="accepted", metrics={"pass_s": 1.5, "steady_lap_s": 1.43}))
    assert stream.getvalue().splitlines()[-1].endswith("batch1: accepted, steady lap 1.43 s")  # what the decision reads


def _campaign_cmd(corpus_dir, model_dir, protocol, *extra):
    return [str(Path(sys.executable).parent / "gpucost"), "campaign", "--variants", "batch1,batch8", "--passes", "2",
            "--corpus", str(corpus_dir / "comparison.jsonl"), "--model", str(model_dir), "--variants-file", str(VARIANTS),
            "--protocol", str(protocol), "--experiment", "camp", *extra]


@pytest.mark.integration
def test_ctrl_c_during_a_pass_then_resume_leaves_every_slot_once(store, tmp_path, corpus_dir, model_dir):
    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 2")
                        + "plan: {setup_hours: 0.5, waiting_hours: 0.25, planned_restarts: 1}\n")
    # Every pass of the first campaign sleeps 4 s after its first measured batch, so the Ctrl-C below, a second after
    # the third pass is seen running, lands inside it whatever the child's start costs (a fresh interpreter, or the
    # tests' fork server) and however late a loaded host lets this loop see it (2 s once let the third pass end
    # first). A sleep, not a 4 s clock of repeated work (min_measured_s): the other tests get the CPU meanwhile.
    # A test run started in the background by a non-interactive shell inherits SIGINT ignored; the
    # campaign must get Ctrl-C's default handling whatever started pytest.
    first = subprocess.Popen(_campaign_cmd(corpus_dir, model_dir, protocol), start_new_session=True,
                             env=dict(os.environ, GPUCOST_FAULT="stall@1:4"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    client = MlflowClient()
    deadline = time.time() + 180
    while time.time() < deadline:
        experiment = client.get_experiment_by_name("camp")
        runs = client.search_runs([experiment.experiment_id], filter_string=f"params.`{schema.PASS_INDEX}` = '3'") if experiment else []
        if runs and runs[0].data.tags.get(schema.STATUS) == "running":
            break
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(first.pid, signal.SIGINT)
    output = first.communicate(timeout=120)[0]
    assert first.returncode == 130, output
    assert "resume with `gpucost campaign --resume c" in output
    campaign_id = output.split("--resume ")[1].split("`")[0]

    table = attempts_table("camp")
    assert len(table) == 3 and table["status"][2] == "failed" and table["reason"][2].startswith("interrupted")

    resumed = subprocess.run(check=False, args=_campaign_cmd(corpus_dir, model_dir, protocol, "--resume", campaign_id),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    table = attempts_table("camp")
    assert len(table) == 5
    assert sorted(table["status"]) == ["accepted"] * 4 + ["failed"]
    finished = table[table["status"] == "accepted"]
    assert sorted(finished["pass_index"]) == ["1", "2", "3", "4"]
    parent = client.search_runs([client.get_experiment_by_name("camp").experiment_id],
                                filter_string=f"tags.`{schema.ROLE}` = 'campaign'")[0]
    assert parent.info.status == "FINISHED"
    for run_id in table["run_id"]:
        run = client.get_run(run_id)
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.params[schema.CAMPAIGN_ID] == campaign_id
    retry = client.get_run(finished[finished["pass_index"] == "3"]["run_id"].iloc[0]).data.params
    assert retry[schema.ATTEMPT] == "2" and retry[schema.RETRY_OF] == table["run_id"][2]

    # The whole-rental forecast holds at least setup + waiting + every attempt's run wall time, the
    # interrupted one included (PROTOCOL §9), as the store itself records them.
    built, _ = build(evidence_of("camp"), load_protocol(protocol), protocol, load_catalog(ROOT / "catalog" / "labkit-2026-09-24.csv"),
                     load_variants(VARIANTS))
    runs = [client.get_run(run_id).info for run_id in table["run_id"]]
    walls_h = sum((run.end_time - run.start_time) / 1000 for run in runs) / 3600
    assert all(run.end_time for run in runs)
    for assessment in built.assessments:
        assert assessment.forecast.comparisons == 5
        assert assessment.forecast.hours >= 0.5 + 0.25 + walls_h
        assert assessment.forecast.comparisons_h == pytest.approx(walls_h)


@pytest.mark.integration
def test_unreachable_tracking_server_is_one_line_exit_2_and_starts_no_pass(tmp_path, corpus_dir, model_dir, protocol_file, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    monkeypatch.chdir(tmp_path)
    result = subprocess.run(check=False, args=_campaign_cmd(corpus_dir, model_dir, protocol_file, "--passes", "5"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "unreachable" in result.stderr and "no pass started" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.unit
@pytest.mark.parametrize("health_s", [None, 3.0, 9.5, tracking_store.HTTP_TIMEOUT_S * 2])
def test_a_server_that_never_answers_is_given_up_on_within_the_check_budget(monkeypatch, health_s):
    """/health fails at once (None) or answers after health_s; the authenticated probe then never answers.
    A fake clock stands for the wall clock: every probe is charged the whole timeout it was granted."""
    now = [0.0]

    def urlopen(request, timeout):
        answers = request.full_url.endswith("/health") and health_s is not None
        now[0] += min(health_s, timeout) if answers else timeout
        if not answers:
            raise urllib.error.URLError("timed out")
        return contextlib.nullcontext()

    monkeypatch.setattr(tracking_store, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(tracking_store.urllib.request, "urlopen", urlopen)
    with pytest.raises(GpucostError, match="unreachable after .* s .*; no pass started"):
        tracking_store.check("http://tracking.invalid:5000")
    assert now[0] <= tracking_store.CHECK_BUDGET_S < 15


@pytest.mark.unit
def test_mlflow_http_retries_are_bounded_unless_the_user_chose_their_own(monkeypatch):
    for name in [*tracking_store.BOUNDED_HTTP, *tracking_store.QUIET]:
        monkeypatch.setenv(name, "")  # recorded first, so the test leaves the environment as it found it
        monkeypatch.delenv(name)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    tracking_store.bound_http_retries()
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == tracking_store.BOUNDED_HTTP["MLFLOW_HTTP_REQUEST_MAX_RETRIES"]
    assert os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] == tracking_store.BOUNDED_HTTP["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"]
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "30"


@pytest.mark.unit
def test_unwritable_sqlite_store_is_refused_before_any_pass(tmp_path, corpus_dir, protocol_file, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/missing/folder/mlflow.db")
    # the store is checked before any model is read: an empty folder stands for the model
    result = CliRunner().invoke(main, _campaign_cmd(corpus_dir, tmp_path, protocol_file)[1:] + ["--passes", "5"])
    assert result.exit_code == 2 and "does not exist" in result.output


@pytest.mark.unit
def test_passes_other_than_the_protocols_are_refused(store, corpus_dir, model_dir, protocol_file):
    result = CliRunner().invoke(main, _campaign_cmd(corpus_dir, model_dir, protocol_file)[1:])
    assert result.exit_code == 2 and "pre-registers 5 passes per variant" in result.output


@pytest.mark.integration
def test_a_campaign_rejudges_its_pending_passes_once_its_reference_passes(store, tmp_path, corpus_dir, model_dir,
                                                                        monkeypatch):
    protocol = write_protocol(tmp_path / "protocol.yaml", max_diff=1.0, min_agreement=0.0)
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 1"))
    command = _campaign_cmd(corpus_dir, model_dir, protocol)
    command[command.index("batch1,batch8")] = "batch8-bf16,batch8"
    reads, read_text = [], Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda path, *a, **k: reads.append(path) or read_text(path, *a, **k))
    locks, lock = [], experiments.lock
    monkeypatch.setattr(experiments, "lock", lambda *a, **k: locks.append(a[2]) or lock(*a, **k))
    result = CliRunner().invoke(main, command[1:] + ["--passes", "1"])
    assert result.exit_code == 0, result.output
    assert reads.count(VARIANTS) == 1  # parsed once into a Declaration, handed down to every slot and pass
    assert reads.count(protocol) == 1 and locks == ["camp"]  # read and locked by the campaign, once for its passes
    table = attempts_table("camp")
    assert list(table["variant"]) == ["batch8-bf16", "batch8"]
    assert list(table["status"]) == ["accepted", "accepted"]  # bf16 ran first, pending, then judged
    bf16 = MlflowClient().get_run(table["run_id"][0]).data.tags
    assert f"against reference run {table['run_id'][1]} (first pending)" in bf16[schema.REJUDGED]
    assert f"re-judged batch8-bf16 run {table['run_id'][0]}: pending -> accepted" in result.output
    judged = MlflowClient().get_run(table["run_id"][0]).data.metrics  # flips counted on re-judging, from both
    assert {"flips_lost", "flips_gained"} <= set(judged)  # verdicts' correct ids (the corpus is not read again)
    assert "flips_lost" not in MlflowClient().get_run(table["run_id"][1]).data.metrics  # the reference: none
    parent = MlflowClient().search_runs([MlflowClient().get_experiment_by_name("camp").experiment_id],
                                        filter_string=f"tags.`{schema.ROLE}` = 'campaign'")[0]
    assert parent.data.metrics[schema.HARNESS_OVERHEAD] >= 0 and "harness overhead:" in result.output


@pytest.mark.integration
def test_a_sweep_whose_batch_runs_out_of_memory_never_tries_the_larger_ones_nor_substitutes(store, tmp_path, corpus_dir,
                                                                                            model_dir, monkeypatch):
    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 1"))
    monkeypatch.setenv("GPUCOST_FAULT", "oom@1")
    command = _campaign_cmd(corpus_dir, model_dir, protocol)
    command[command.index("batch1,batch8")] = "batch4,batch8"
    result = CliRunner().invoke(main, command[1:] + ["--passes", "1"])
    assert result.exit_code == 0, result.output
    assert "not tried: batch8 (batch4 ran out of memory at batch 4: larger batch sizes of its sweep are not tried" in result.output
    table = attempts_table("camp")
    assert list(table["variant"]) == ["batch4"] and table["status"][0] == "failed"  # kept, nothing substituted
    assert table["reason"][0].startswith("out of memory") and table["completed_entries"][0] == 0
    parent = MlflowClient().search_runs([MlflowClient().get_experiment_by_name("camp").experiment_id],
                                        filter_string=f"tags.`{schema.ROLE}` = 'campaign'")[0]
    assert parent.data.tags[schema.NOT_TRIED].startswith("batch8: batch4 ran out of memory")


@pytest.mark.integration
def test_child_imports_once_forks_every_pass_from_one_starter_and_counts_its_imports_in_load(
        store, tmp_path, corpus_dir, model_dir, plain_child_start):
    """`child_imports: once`: the campaign's own starter imports torch and transformers once; each pass records that
    time as import_s and counts it in its load_s (PROTOCOL.md section 4: load is recorded, never dropped), and the
    policy is said on the campaign and on every pass. Nothing of the starter outlives the campaign."""
    from gpucost_mlflow.execution import forkserver

    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 1")
                        + "child_imports: once\n")
    result = CliRunner().invoke(main, _campaign_cmd(corpus_dir, model_dir, protocol)[1:] + ["--passes", "1"])
    assert result.exit_code == 0, result.output
    assert forkserver.ENV not in os.environ
    table = attempts_table("camp")
    assert list(table["status"]) == ["accepted", "accepted"]
    imports = []
    for run_id in table["run_id"]:
        run = MlflowClient().get_run(run_id)
        assert run.data.metrics["load_s"] >= run.data.metrics["import_s"] > 0
        assert run.data.params[schema.CACHE_POLICY].startswith("a child process per pass, forked from a starter")
        imports.append(run.data.metrics["import_s"])
    assert imports[0] == imports[1]  # timed once, by the starter both were forked from
