"""A delivery fleet (`gpucost fleet deliver`, docs/fleet.md "Deliver"): the decision's configuration delivered on the
lots its plan rents, one SkyPilot managed job per lot told its rank; refused in one line when there is nothing to
deliver or the worst case is above --max-cost; a dry run's task accepted by the real SkyPilot offline."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import delivery
from tests.helpers import SHIPPED_PROTOCOL, VARIANTS, cli_runner
from tests.test_fleet import fake_sky, market_python  # noqa: F401 - the stand-in's fixture
from tests.test_fleet_plan import L4, L4_PASSES, NAMES, ON_L4

L4_AWS = ("g6.xlarge", "L4", 1, 4, 16, 24576, "0.8048", "0.3501", "us-east-1", "use1-az1")


@pytest.mark.unit
def test_the_shares_of_every_rank_partition_the_corpora():
    names = [f"corpus-{n:02d}.jsonl" for n in range(12)]
    shares = [delivery.share(list(reversed(names)), rank, 3) for rank in range(3)]
    assert sorted(n for s in shares for n in s) == names and [len(s) for s in shares] == [4, 4, 4]
    assert shares[1] == ["corpus-01.jsonl", "corpus-04.jsonl", "corpus-07.jsonl", "corpus-10.jsonl"]
    with pytest.raises(GpucostError, match="rank 3 of 3"):
        delivery.share(names, 3, 3)


@pytest.mark.unit
def test_a_deliverable_is_keyed_by_its_corpus_and_the_decision_and_the_end_check_names_what_is_missing():
    assert delivery.key("f" * 64, "run1") == delivery.key("f" * 64, "run1") != delivery.key("f" * 64, "run2")
    found = delivery.completeness({"a": ("1", "2"), "b": ("3",), "c": ("4",), "d": ("5",)},
                                  {"a": [("2", "1")], "b": [("3",), ("3",)], "d": [("4",)]})
    assert (found.missing, found.twice, found.short, found.complete) == (("c",), ("b",), ("d",), False)
    assert delivery.completeness({"a": ("1",)}, {"a": [("1",)]}).complete


@pytest.mark.unit
@pytest.mark.parametrize("none, verdict, says", [
    ("undecided", None, "the decision is undecided, nothing to deliver"),
    ("nothing accepted", None, "no decision to deliver"),
    ("", "not yet confirmed", "the chosen configuration is not yet confirmed: `gpucost confirm --experiment e"),
])
def test_nothing_to_deliver_is_refused_in_one_line(none, verdict, says):
    with pytest.raises(GpucostError, match=None) as refused:
        delivery.refuse("the decision", none, verdict, "gpucost confirm --experiment e")
    assert str(refused.value).startswith(says) and "\n" not in str(refused.value)


def _aws_l4_catalog(tmp_path: Path) -> Path:
    from gpucost_mlflow.core.inputs import shipped
    from gpucost_mlflow.core.money import market

    text = market.catalog_text([market.Offer("aws", "g6.xlarge", "us-east-1", "L4", 1, 24.0, Decimal("0.8048"), None)],
                               version="skypilot-v8-2026-11-28", source="SkyPilot 0.14.1 catalog v8",
                               as_of={"aws": dt.date(2026, 11, 28)}, names=NAMES,
                               terms=market.load_terms(shipped.shipped(shipped.BILLING_TERMS)), interruptions=None)
    path = tmp_path / "aws.csv"
    path.write_text(text.text)
    return path


def _decided(experiment, tmp_path: Path, confirmed: bool) -> Path:
    """batch8 measured on an L4, priced from a SkyPilot import, the decision logged; confirmed when asked."""
    from gpucost_mlflow.cli import main

    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra=ON_L4)
    if confirmed:
        experiment("batch8", L4, 10.0, role="confirmation", fingerprint="c" * 64,
                   metrics_extra={**ON_L4, "measured_total_s": 660.0, "repetitions": 66})
    catalog = _aws_l4_catalog(tmp_path)
    logged = cli_runner().invoke(main, ["report", "--experiment", "scenario", "--protocol", str(SHIPPED_PROTOCOL),
                                        "--variants-file", str(VARIANTS), "--catalog", str(catalog),
                                        "--out", str(tmp_path / "report")])
    assert logged.exit_code == 0, logged.output
    return catalog


def _corpora(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "corpora"
    folder.mkdir(exist_ok=True)
    for n in range(count):
        (folder / f"corpus-{n:02d}.jsonl").write_text(json.dumps({"id": f"{n}-1", "text": "a"}) + "\n")
    return folder


def _deliver(tmp_path: Path, catalog: Path, *extra: str):
    from gpucost_mlflow.cli import main

    wheel = tmp_path / "gpucost_mlflow-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a wheel stands in")
    (tmp_path / "model").mkdir(exist_ok=True)
    return cli_runner().invoke(main, [
        "fleet", "deliver", "--experiment", "scenario", "--corpora", str(_corpora(tmp_path, 12)), "--protocol",
        str(SHIPPED_PROTOCOL), "--variants-file", str(VARIANTS), "--catalog", str(catalog), "--model",
        str(tmp_path / "model"), "--wheel", str(wheel), "--torch", "2.13.0", "--out", str(tmp_path / "out"), *extra])


@pytest.mark.unit
def test_an_unconfirmed_decision_is_refused_naming_the_confirm_command(fake_sky, experiment, tmp_path):  # noqa: F811
    catalog = _decided(experiment, tmp_path, confirmed=False)
    result = _deliver(tmp_path, catalog, "--max-cost", "100", "--dry-run")
    assert result.exit_code == 2 and result.output.count("Error:") == 1, result.output
    assert "the chosen configuration is not yet confirmed: `gpucost confirm --experiment scenario" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.unit
def test_a_confirmed_decision_is_written_one_worker_per_lot_and_refused_above_its_worst_case(
        fake_sky, experiment, tmp_path):  # noqa: F811
    catalog = _decided(experiment, tmp_path, confirmed=True)
    refused = _deliver(tmp_path, catalog, "--max-cost", "0.01", "--dry-run")
    assert refused.exit_code == 2 and refused.output.count("Error:") == 1, refused.output
    assert "the delivery's worst case " in refused.output and "exceeds --max-cost 0.01 USD" in refused.output
    assert not (tmp_path / "out").exists()

    done = _deliver(tmp_path, catalog, "--max-cost", "100", "--dry-run", "--bucket", "s3://my-corpora/")
    assert done.exit_code == 0, done.output
    assert "worst case " in done.output.splitlines()[0] and "batch8 on NVIDIA L4, 1 worker of L4:1" in done.output
    task = yaml.safe_load((tmp_path / "out").glob("*-deliver.yaml").__next__().read_text())
    # A corpus failing its first try exits 75: SkyPilot starts the worker again, the one retry.
    assert task["resources"] == {"accelerators": "L4:1", "use_spot": False, "infra": "aws/us-east-1",
                                 "job_recovery": {"recover_on_exit_codes": [75]}}
    assert "gpucost fleet worker " in task["run"] and "--variant batch8 " in task["run"]
    assert '--rank "$SKYPILOT_JOB_RANK" --workers "$SKYPILOT_NUM_JOBS"' in task["run"]
    # Corpora in and outputs out through the bucket SkyPilot mounts, never the tracking store.
    assert task["file_mounts"]["~/gpucost/corpus/corpora"] == {"source": "s3://my-corpora", "mode": "MOUNT"}
    decision = re.search(r"--decision (\S+) ", task["run"]).group(1)
    assert f'--outputs "$HOME/gpucost/corpus/corpora/outputs/{decision}"' in task["run"]
    assert f"outputs: s3://my-corpora/outputs/{decision}/ (the bucket, mounted on every worker)" in done.output
    shares = json.loads((tmp_path / "out" / "shares.json").read_text())
    assert sorted(n for s in shares.values() for n in s) == sorted(p.name for p in (tmp_path / "corpora").glob("*.jsonl"))

    python = market_python()
    if python is None:
        pytest.skip("SkyPilot is not installed in .venv-market (make install builds it)")
    from tests.skypilot_home import AWS_VMS, skypilot_home

    home = skypilot_home(tmp_path / "home", dt.date(2026, 11, 28), [*AWS_VMS, L4_AWS])
    check = ("import sys, sky\nt = sky.Task.from_yaml(sys.argv[1])\nr = list(t.resources)[0]\n"
             "print(t.name, r.accelerators, r.cloud, r.region, sorted(t.file_mounts), sorted(t.storage_mounts),"
             " r.job_recovery)\n")
    path = next((tmp_path / "out").glob("*-deliver.yaml"))
    accepted = subprocess.run([str(python), "-c", check, str(path)], env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "HOME": str(home)},
                              capture_output=True, text=True, timeout=120, check=False)
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    assert "{'L4': 1} AWS us-east-1 ['~/gpucost/model'" in accepted.stdout  # the corpora are no copy but:
    assert accepted.stdout.rstrip().endswith("['~/gpucost/corpus/corpora'] {'recover_on_exit_codes': [75], "
                                             "'strategy': None}")  # the bucket SkyPilot mounts, and the retry


# --- a whole delivery through SkyPilot's stand-in -------------------------------------------------------------------


def _production_corpora(corpus_dir: Path, folder: Path) -> Path:
    """12 production corpora of 3 inputs (corpus-01 of 2), from the tuning and confirmation corpora."""
    rows = [json.loads(line) for name in ("tuning", "confirmation")
            for line in (corpus_dir / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    folder.mkdir()
    for n in range(12):
        mine = rows[3 * n:3 * n + (2 if n == 1 else 3)]
        (folder / f"corpus-{n:02d}.jsonl").write_text(
            "".join(json.dumps({"id": f"c{n}-{row['id']}", "text": row["text"]}) + "\n" for row in mine))
    return folder


@pytest.mark.integration
def test_three_lots_deliver_twelve_corpora_once_through_two_preemptions_and_a_retry_and_the_bill_holds_the_forecast(
        fake_sky, experiment, tmp_path, monkeypatch, corpus_dir, model_dir):  # noqa: F811
    """The decision (batch8 on an L4, confirmed, logged) delivered on 3 lots: worker 0 is preempted twice mid-corpus,
    worker 1's first attempt writes an id twice in every corpus of 3 inputs (its corpus-01 has 2: accepted) and exits
    75, SkyPilot starts it again: it skips corpus-01 by its key and retries the other three once. Every corpus is
    delivered exactly once, every attempt billed, the ratios land on the decision run and the next report's card.
    The plan's lot count is that of a 1-GPU configuration; the test asks the decision for 3 lots."""
    from dataclasses import replace

    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.cli import fleet_deliver, main
    from tests.servers import MlflowServer
    from tests.test_fleet import this_machines_address, wait_for

    address = this_machines_address()
    if address is None:
        pytest.skip("this machine has no address but the loopback, which a fleet refuses")
    catalog = _decided(experiment, tmp_path, confirmed=True)
    server = MlflowServer(os.environ["MLFLOW_TRACKING_URI"], tmp_path / "server", host=address).start()
    try:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
        read = fleet_deliver.read_decision
        monkeypatch.setattr(fleet_deliver, "read_decision", lambda *a: replace(read(*a), lots=3))
        bucket = _production_corpora(corpus_dir, tmp_path / "bucket")
        monkeypatch.setenv("FAKE_SKY_BUCKETS", json.dumps({"s3://corpora": str(bucket)}))
        monkeypatch.setenv("FAKE_SKY_DEVICE_NAMES", json.dumps({"L4": "NVIDIA L4"}))
        monkeypatch.setenv("FAKE_SKY_FIRST_ATTEMPT_ENV", json.dumps({"2": {"GPUCOST_FAULT": "dupid@3"}}))
        monkeypatch.setenv("GPUCOST_FAULT", "stall@1:2")  # each corpus sleeps 2 s: a preemption lands inside one
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        wheel = tmp_path / "gpucost_mlflow-0.1.0-py3-none-any.whl"
        wheel.write_bytes(b"a wheel stands in")
        launched = cli_runner().invoke(main, [
            "fleet", "deliver", "--experiment", "scenario", "--corpora", str(bucket), "--bucket", "s3://corpora",
            "--protocol", str(SHIPPED_PROTOCOL), "--variants-file", str(VARIANTS), "--catalog", str(catalog),
            "--model", str(model_dir), "--wheel", str(wheel), "--torch", "2.13.0", "--max-cost", "100",
            "--out", str(tmp_path / "out")])
        assert launched.exit_code == 0, launched.output
        fleet_id = re.search(r"delivery fleet (f[0-9a-f]{10}) launched: 3 worker", launched.output).group(1)
        client, jobs = MlflowClient(server.uri), fake_sky / "jobs"
        experiment_id = client.get_experiment_by_name("scenario").experiment_id

        def running(worker: str, but: set[str]):
            failed = [p for p in jobs.glob("*/state.json") if json.loads(p.read_text())["status"] == "FAILED"]
            assert not failed, (failed[0].parent / "run-0.log").read_text()[-3000:]
            return {r.info.run_id for r in client.search_runs([experiment_id], filter_string=(
                f"tags.`gpucost.fleet.gpu` = '{worker}' AND attributes.status = 'RUNNING' AND "
                "tags.`gpucost.delivery.key` != ''"))} - but

        seen: set[str] = set()
        for recoveries in (1, 2):  # worker 0's machine is lost mid-corpus, twice
            seen |= wait_for(lambda but=frozenset(seen): running("L4-w0", set(but)), 240, f"worker 0's corpora, attempt {recoveries}", jobs)
            (jobs / "1" / "preempt").touch()
            wait_for(lambda n=recoveries: json.loads((jobs / "1" / "state.json").read_text())["recovery_count"] == n,
                     60, f"recovery {recoveries}", jobs)

        def ended():
            states = [json.loads((jobs / str(i) / "state.json").read_text()) for i in (1, 2, 3)]
            return all(s["status"] in ("SUCCEEDED", "FAILED") for s in states) and states
        states = wait_for(ended, 400, "every worker's end", jobs)
        assert [s["status"] for s in states] == ["SUCCEEDED"] * 3, (jobs / "2" / "run-0.log").read_text()[-3000:]
        assert [s["recovery_count"] for s in states] == [2, 1, 0]

        status = cli_runner().invoke(main, ["fleet", "status", "--fleet", fleet_id, "--experiment", "scenario"])
        assert status.exit_code == 0, status.output
        lines = status.stdout.splitlines()
        assert lines[0].startswith("L4-w0: job 1 SUCCEEDED; aws g6.xlarge in us-east-1; corpora 4 done, 0 running, "
                                   "0 failed (") and "interrupted by a lost machine, delivered again), 0 of its share " \
                                                    "left;" in lines[0]
        assert ": 3 attempts (2 recoveries), setup included, " in lines[0]
        assert "corpora 4 done, 0 running, 3 failed, 0 of its share left" in lines[1]
        assert ": 2 attempts (1 recovery), setup included, " in lines[1]
        assert "; 12 of 12 corpora delivered; realized " in lines[3]
        assert "Failed: corpus-04.jsonl (failed on L4-w1; retried once, delivered on L4-w1); corpus-07.jsonl" in \
            status.stdout
        assert "Complete: every input id of the 12 corpora delivered exactly once (35 inputs, one accepted " \
               "deliverable per corpus)" in status.stdout

        billed = cli_runner().invoke(main, ["bill", "--experiment", "scenario", "--fleet", fleet_id])
        assert billed.exit_code == 0, billed.output
        assert billed.stdout.startswith("L4-w0: job 1 SUCCEEDED; realized ")
        assert "forecast (its share of the committed plan)" in billed.stdout
        held = next(line for line in billed.stdout.splitlines() if line.startswith("Forecast held: cost "))
        assert "cost per validated result " in held and "/ 12 accepted deliverables)" in held
        decision_id = json.loads((tmp_path / "out" / "shares.json").read_text()) and re.search(
            r"recorded on decision run (\S+):", billed.stdout).group(1)
        metrics = client.get_run(decision_id).data.metrics
        assert 0 < metrics["delivery_cost_ratio"] and 0 < metrics["delivery_window_ratio"]
        assert metrics["delivery_accepted"] == 12

        keyed = client.search_runs([experiment_id], filter_string="tags.`gpucost.delivery.key` != ''",
                                   max_results=1000)
        accepted = [r for r in keyed if r.data.tags.get("gpucost.status") == "accepted"]
        assert sorted(r.data.tags["gpucost.delivery.corpus"] for r in accepted) == sorted(
            p.name for p in bucket.glob("*.jsonl"))  # each corpus once
        for run in accepted:  # the outputs in the bucket, none in the tracking store
            assert Path(run.data.tags["gpucost.delivery.outputs"]).name == run.data.tags[
                "gpucost.delivery.corpus"].removesuffix(".jsonl")
            assert not [a for a in client.list_artifacts(run.info.run_id) if a.path.startswith("predictions")]
        assert len(list((bucket / "outputs" / decision_id).glob("*/predictions*"))) == 12

        report = cli_runner().invoke(main, ["report", "--experiment", "scenario", "--protocol", str(SHIPPED_PROTOCOL),
                                            "--variants-file", str(VARIANTS), "--catalog", str(catalog),
                                            "--out", str(tmp_path / "report2")])
        assert report.exit_code == 0, report.output
        page = (tmp_path / "report2" / "report.md").read_text()
        card = next(line for line in page.splitlines() if line.startswith("- **Delivered:** "))
        assert card.startswith("- **Delivered:** cost ") and f"(fleet {fleet_id}, decision run {decision_id})" in card
    finally:
        server.stop()
