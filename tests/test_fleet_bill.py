"""A fleet's real bill (docs/fleet.md, "What it really cost"): every attempt SkyPilot ran a job on, setup included,
billed by the provider's terms at the price of the offer it was launched on, beside the worst case and the committed
plan.

The arithmetic is pure (core/fleet/realized.py). Through SkyPilot's stand-in (tests/fakes/sky), a job preempted twice
is read back from the managed-job queue by `gpucost fleet status` and `gpucost bill --fleet`, and recorded on the
fleet run.
"""

from __future__ import annotations

import json
import math
import time
from decimal import ROUND_UP, Decimal
from pathlib import Path

import pytest

from gpucost_mlflow.core.fleet.realized import Attempts, from_queue, realized
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.money import market
from gpucost_mlflow.report.bill import fleet_total_line
from tests.helpers import cli_runner
from tests.test_fleet import fake_sky  # noqa: F401 - the stand-in's fixture

AWS = market.load_terms(shipped.shipped(shipped.BILLING_TERMS))["aws"]  # min 60 s, per 1 s
A10G_PRICE = Decimal("1.006")  # aws g5.xlarge in us-east-1, on demand
FLEET = "f0123456789"


@pytest.mark.unit
def test_long_attempts_are_billed_to_the_second_at_the_offers_price():
    # Two lost attempts of 1,800 s and 2,400 s, then 600.4 s: 4,200 + 601 s billed at 1.006 USD/h = 1.3416 USD.
    found = realized(Attempts(2, Decimal(4200), Decimal("600.4"), False), A10G_PRICE, AWS, "aws")
    assert (found.billed_s, found.cost, found.partial) == (Decimal(4801), Decimal("1.35"), False)
    assert found.line() == ("1.35 USD: 3 attempts (2 recoveries), setup included, 4800 s used, 4801 s billed "
                            "(aws: min 60 s, per 1 s each attempt) at 1.006 USD/h")


@pytest.mark.unit
def test_every_attempt_is_billed_at_least_the_providers_minimum():
    # Three attempts of 80 s together: three machines, each billed its 60 s minimum.
    found = realized(Attempts(2, Decimal(50), Decimal(30), False), A10G_PRICE, AWS, "aws")
    assert (found.billed_s, found.cost) == (Decimal(180), Decimal("0.06"))  # 0.0503 USD, up to the cent


@pytest.mark.unit
def test_a_running_job_is_billed_so_far_and_said_partial():
    found = realized(Attempts(0, Decimal(0), Decimal(3600), True), A10G_PRICE, AWS, "aws")
    assert found.partial and found.line().startswith("1.01 USD so far (partial: the job is still running): 1 attempt")


@pytest.mark.unit
def test_without_billing_terms_the_seconds_are_billed_as_run():
    found = realized(Attempts(1, Decimal(10), Decimal(20), False), Decimal("3.6"), None, "lambda")
    assert (found.billed_s, found.cost) == (Decimal(30), Decimal("0.03"))
    assert "no billing terms for lambda: the seconds as run" in found.line()


@pytest.mark.unit
def test_the_queue_record_splits_the_lost_attempts_from_the_last_one():
    # SkyPilot's queue: job_duration is every attempt's run time together; last_recovered_at the last one's start.
    assert from_queue("SUCCEEDED", 2, 100.0, 1000.0, 1030.0, 5000.0) == Attempts(2, Decimal("70.0"), Decimal("30.0"),
                                                                                 False)
    assert from_queue("RUNNING", 0, 12.5, 1000.0, None, 1012.5) == Attempts(0, Decimal(0), Decimal("12.5"), True)
    # While RECOVERING the lost attempt is not counted in recovery_count yet, and no machine runs the job.
    assert from_queue("RECOVERING", 1, 70.0, 1000.0, None, 1030.0) == Attempts(2, Decimal("70.0"), None, True)


@pytest.mark.unit
@pytest.mark.parametrize("status, last_recovered_at", [("PENDING", -1.0), ("STARTING", None), ("CANCELLED", -1.0)])
def test_a_job_never_on_a_machine_has_no_attempts_not_a_zero_cost(status, last_recovered_at):
    assert from_queue(status, 0, 0.0, last_recovered_at, None, 1000.0) is None


@pytest.mark.unit
def test_the_fleet_line_sets_the_realized_rental_beside_the_worst_case_and_the_committed_plan():
    line = fleet_total_line({"L4": Decimal("1.20"), "A10G": Decimal("2.92")}, False, Decimal("13.40"),
                            Decimal("110.00"), "USD", "run 3f2a")
    assert line == ("Fleet realized 4.12 USD of a worst case 13.40 USD; the latest decision (run 3f2a) commits "
                    "110.00 USD for the work itself")
    line = fleet_total_line({"L4": None, "A10G": Decimal("0.06")}, True, None, None, "", "no decision run yet")
    assert line == ("Fleet realized 0.06 USD so far (partial: a job is still running), without L4 (empty) (no worst "
                    "case recorded); no committed plan to set it beside: no decision run yet")


# --- through SkyPilot's stand-in -------------------------------------------------------------------------------------


def _state(jobs: Path, job_id: int) -> dict:
    return json.loads((jobs / str(job_id) / "state.json").read_text())


def _wait(jobs: Path, job_id: int, what: str, predicate, timeout_s: float = 60) -> dict:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        state = _state(jobs, job_id)
        if predicate(state):
            return state
        time.sleep(0.1)
    raise AssertionError(f"job {job_id}: {what} did not happen within {timeout_s} s: {_state(jobs, job_id)}")


@pytest.mark.integration
def test_a_job_preempted_twice_is_billed_for_all_three_attempts_setup_included(fake_sky, store, tmp_path):  # noqa: F811
    import sky
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.cli import main
    from gpucost_mlflow.tracking import fleet_run

    client = MlflowClient(store)
    experiment_id = client.create_experiment("fleet")
    run_id = fleet_run.open_fleet(client, experiment_id, FLEET, ["A10G"], {"gpus": "A10G", "spot": "false"}, "a fleet")
    finish, set_up = tmp_path / "finish", tmp_path / "set-up"
    # Each attempt: its setup (a second here, then a line in set_up), then its run until the test lets it finish.
    task = sky.Task.from_yaml_config({"name": f"gpucost-{FLEET}-a10g", "resources": {"accelerators": "A10G:1"},
                                      "run": f"sleep 1; echo >> {set_up}; until [ -e {finish} ]; do sleep 0.1; done"})
    job_id = sky.jobs.launch(task, name=task.name)[0][0]
    fleet_run.record(client, run_id, "A10G", {"job_id": str(job_id), "worst_cost": "3.15"})
    jobs = fake_sky / "jobs"
    for recoveries in (1, 2):
        _wait(jobs, job_id, f"attempt {recoveries}'s setup",
              lambda s, n=recoveries: set_up.exists() and len(set_up.read_text().splitlines()) == n)
        sky.jobs.preempt(job_id)  # its machine is lost mid-run; SkyPilot relaunches it
        _wait(jobs, job_id, f"recovery {recoveries}",
              lambda s, n=recoveries: s["status"] == "RUNNING" and s["recovery_count"] == n)

    running = cli_runner().invoke(main, ["fleet", "status", "--fleet", FLEET, "--experiment", "fleet"])
    assert running.exit_code == 0, running.output
    assert "job 1 RUNNING; aws g5.xlarge in us-east-1" in running.stdout
    assert "so far (partial: the job is still running): 3 attempts (2 recoveries), setup included" in running.stdout
    assert "realized_a10g_usd" not in client.get_run(run_id).data.metrics  # not final: nothing recorded

    _wait(jobs, job_id, "attempt 3's setup", lambda s: len(set_up.read_text().splitlines()) == 3)
    finish.touch()
    state = _wait(jobs, job_id, "its end", lambda s: s["status"] == "SUCCEEDED")
    # What SkyPilot keeps: the two lost attempts' run time together, and the last one's start and end.
    lost_s, last_s = state["job_duration"], state["end_at"] - state["last_recovered_at"]
    assert lost_s >= 2 and last_s >= 1  # each attempt ran its second of setup
    billed_s = max(2 * 60, math.ceil(lost_s)) + max(60, math.ceil(last_s))
    cost = (Decimal(billed_s) / 3600 * A10G_PRICE).quantize(Decimal("0.01"), rounding=ROUND_UP)

    billed = cli_runner().invoke(main, ["bill", "--experiment", "fleet", "--fleet", FLEET])
    assert billed.exit_code == 0, billed.output
    lines = billed.stdout.splitlines()
    assert lines[0].startswith(f"A10G: job 1 SUCCEEDED; realized {cost} USD: 3 attempts (2 recoveries), setup included, ")
    assert lines[0].endswith(f" s used, {billed_s} s billed (aws: min 60 s, per 1 s each attempt) at 1.006 USD/h; "
                             "worst case 3.15 USD")
    assert lines[1] == (f"Fleet realized {cost} USD of a worst case 3.15 USD; no committed plan to set it beside: no "
                        "decision run yet (`gpucost report` logs one)")
    fleet = client.get_run(run_id).data
    assert fleet.metrics["realized_a10g_usd"] == float(cost)
    assert fleet.tags["gpucost.fleet.A10G.realized"] == str(cost) and fleet.tags["gpucost.fleet.A10G.recoveries"] == "2"
    assert fleet.tags["gpucost.fleet.A10G.realized_line"].startswith(f"{cost} USD: 3 attempts")


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--fleet", "fnothere"], "no fleet 'fnothere' in this experiment"),
    ([], "--paid and --currency go together"),
    (["--paid", "118.40"], "--paid and --currency go together"),
])
def test_a_bill_of_an_unknown_fleet_or_without_an_amount_is_one_line_exit_2(fake_sky, store, args, message):  # noqa: F811
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.cli import main

    MlflowClient(store).create_experiment("fleet")
    result = cli_runner().invoke(main, ["bill", "--experiment", "fleet", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and result.stderr.count("Error:") == 1 and "Traceback" not in result.output
