"""`gpucost bill` (issue "What the money buys", item 6): what was paid for the chosen plan, recorded on the decision
run, shown by the next report against what was committed; a second bill replaces the first and the run's description
keeps both; bad input is one line, exit 2, nothing recorded."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.bill import Bill, difference, parse_paid
from gpucost_mlflow.report.bill import bill_lines
from gpucost_mlflow.tracking import decision_run, schema
from tests.helpers import CATALOG, VARIANTS
from tests.scenario import EXPERIMENT, RTX

pytestmark = pytest.mark.unit

NOTE = "invoice 4411: one extra day of storage"
AT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ")
COMMITTED_USD, PAID_USD = schema.in_currency(schema.COMMITTED_COST, "USD"), schema.in_currency(schema.PAID, "USD")


def bill(*args: str, experiment: str = EXPERIMENT):
    return CliRunner().invoke(main, ["bill", "--experiment", experiment, *args])


def run_report(tmp_path: Path):
    """`gpucost report` on the scenario experiment with the repository's catalog and variants."""
    return CliRunner().invoke(main, ["report", "--experiment", EXPERIMENT, "--out", str(tmp_path / "out"),
                                     "--catalog", str(CATALOG), "--variants-file", str(VARIANTS)])


def decided(experiment, tmp_path: Path) -> str:
    """Five batch8 passes on an RTX 4090 and `gpucost report`: a decision run, committed 110.00 USD; its id."""
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    result = run_report(tmp_path)
    assert result.exit_code == 0, result.output
    run = latest()
    assert run.data.tags[schema.DECISION] == schema.DECIDED and run.data.metrics[COMMITTED_USD] == 110.0
    return run.info.run_id


def experiment_id(name: str = EXPERIMENT) -> str:
    return mlflow.get_experiment_by_name(name).experiment_id


def latest(name: str = EXPERIMENT):
    return decision_run.latest_decision(MlflowClient(), experiment_id(name))


def logged(name: str, *, decision: str = schema.DECIDED, currency: str = "USD", committed: float = 110.0) -> str:
    """A decision run with the tags and metric a real one has, written through log_decision (no report)."""
    client = MlflowClient()
    found = client.get_experiment_by_name(name)
    eid = found.experiment_id if found else client.create_experiment(name)
    tags = {schema.NOTE: "### Decision: batch8 on NVIDIA GeForce RTX 4090\n\nDecision: batch8.", schema.DECISION: decision}
    metrics = {}
    if decision == schema.DECIDED:
        tags.update({schema.DECISION_VARIANT: "batch8", schema.DECISION_DEVICE: RTX, schema.DECISION_CURRENCY: currency})
        metrics = {schema.in_currency(schema.COMMITTED_COST, currency): committed}
    return decision_run.log_decision(client, eid, decision_run.Decided("decision: batch8", "d" * 64, tags, {}, metrics))


# Pure: the amount, the difference and the report's line.

def test_bill_lines_say_committed_against_paid_and_the_difference():
    bill_ = Bill(Decimal("118.40"), "USD", "invoice 4411", "2026-12-01T10:00Z", "r1", Decimal("110.00"))
    assert bill_lines(bill_) == [("Committed 110.00 USD; paid 118.40 USD (+8.40 USD, +7.6 %), recorded "
                                 "2026-12-01T10:00Z: invoice 4411")]
    assert bill_lines(bill_, Decimal("110.00"), "USD") == bill_lines(bill_)
    assert bill_lines(None, Decimal("110.00"), "USD") == []


@pytest.mark.parametrize("paid, committed, shown", [
    ("108.40", "110.00", "(-1.60 USD, -1.5 %)"),
    ("110.00", "110.00", "(0.00 USD, 0.0 %)"),
    ("2200.00", "2071.00", "(+129.00 USD, +6.2 %)"),
    ("5.00", "0", "(+5.00 USD)"),
])
def test_bill_lines_sign_the_difference_and_round_it_half_up(paid, committed, shown):
    (line,) = bill_lines(Bill(Decimal(paid), "USD", "", "2026-12-01T10:00Z", "r1", Decimal(committed)))
    assert shown in line and line.endswith("recorded 2026-12-01T10:00Z")


def test_a_bill_without_a_committed_cost_or_in_another_currency_shows_what_was_paid_alone():
    bill_ = Bill(Decimal("118.40"), "USD", "", "2026-12-01T10:00Z", "r1")
    assert bill_lines(bill_) == ["Paid 118.40 USD (no committed cost to compare it with), recorded 2026-12-01T10:00Z"]
    (line,) = bill_lines(bill_, Decimal("100.00"), "EUR")
    assert line.startswith("Paid 118.40 USD (the committed 100.00 EUR is in another currency: no difference)")


def test_the_difference_is_to_the_cent_and_its_percentage_to_a_tenth():
    assert difference(Decimal("118.40"), Decimal("110.00")) == (Decimal("8.40"), Decimal("7.6"))
    assert difference(Decimal("1.00"), Decimal(0)) == (Decimal("1.00"), None)


@pytest.mark.parametrize("text", ["-5", "-0.01", "abc", "", "nan", "Infinity", "1,000", "12 USD"])
def test_a_negative_or_non_numeric_amount_is_refused(text):
    with pytest.raises(GpucostError, match="--paid must be an amount >= 0"):
        parse_paid(text)


def test_an_amount_is_kept_to_the_cent_half_up_and_zero_is_a_bill():
    assert parse_paid(" 118.4 ") == Decimal("118.40")
    assert parse_paid("0.005") == Decimal("0.01")
    assert parse_paid("0") == Decimal("0.00")


def test_the_history_replaces_its_section_and_stays_under_the_tag_limit():
    base = "### Decision\n\nDecision: batch8."
    once = decision_run.billed_note(base, ["- 2026-12-01T10:00Z: 118.40 USD; invoice 1"])
    twice = decision_run.billed_note(once, ["- 2026-12-01T10:00Z: 118.40 USD; invoice 1",
                                            "- 2026-12-02T09:30Z: 120.00 USD"])
    assert once.startswith(base + "\n\n### Bill history\n") and twice.count("### Bill history") == 1
    assert twice.endswith("- 2026-12-01T10:00Z: 118.40 USD; invoice 1\n- 2026-12-02T09:30Z: 120.00 USD")
    many = [f"- 2026-12-01T10:{i:02d}Z: {i}.00 USD; " + "x" * 400 for i in range(40)]
    bounded = decision_run.billed_note("y" * 7000, many, limit=8000)
    assert len(bounded) <= 8000 and bounded.endswith(many[-1])
    assert re.search(r"\n(\d+) earlier bill\(s\) left out", bounded)
    assert decision_run._history(bounded)[1] + len(decision_run._history(bounded)[0]) == 40


# Through the CLI and the store.

def test_bill_then_report_shows_committed_against_paid_and_the_difference(experiment, tmp_path):
    run_id = decided(experiment, tmp_path)
    result = bill("--paid", "118.40", "--currency", "USD", "--note", f"  {NOTE}\n")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"bill recorded on decision run {run_id}: Committed 110.00 USD; paid 118.40 USD "
                                    "(+8.40 USD, +7.6 %), recorded ")
    run = MlflowClient().get_run(run_id)
    tags = run.data.tags
    assert (tags[schema.BILL_PAID], tags[schema.BILL_CURRENCY], tags[schema.BILL_NOTE]) == ("118.40", "USD", NOTE)
    assert AT.fullmatch(tags[schema.BILL_AT]) and run.data.metrics[PAID_USD] == 118.40
    assert "### Bill history" in tags[schema.NOTE] and tags[schema.NOTE].endswith(f": 118.40 USD; {NOTE}")

    result = run_report(tmp_path)  # the next report: a new decision run, without a bill of its own
    assert result.exit_code == 0, result.output
    assert latest().info.run_id != run_id
    found = decision_run.latest_bill(MlflowClient(), experiment_id())
    assert found == Bill(Decimal("118.40"), "USD", NOTE, tags[schema.BILL_AT], run_id, Decimal("110.00"))
    assert bill_lines(found) == [(f"Committed 110.00 USD; paid 118.40 USD (+8.40 USD, +7.6 %), recorded "
                                 f"{tags[schema.BILL_AT]}: {NOTE}")]


def test_the_report_after_a_bill_shows_committed_against_paid(experiment, tmp_path):
    decided(experiment, tmp_path)
    assert bill("--paid", "118.40", "--currency", "USD", "--note", NOTE).exit_code == 0
    assert run_report(tmp_path).exit_code == 0
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "Committed 110.00 USD; paid 118.40 USD (+8.40 USD, +7.6 %), recorded " in markdown
    assert NOTE in markdown


def test_no_bill_recorded_reads_as_none(store):
    logged("fresh")
    assert decision_run.latest_bill(MlflowClient(), experiment_id("fresh")) is None


def test_a_second_bill_replaces_the_first_and_the_description_keeps_both(store):
    run_id = logged("billed")
    first = bill("--paid", "118.40", "--currency", "USD", "--note", "invoice 4411", experiment="billed")
    assert first.exit_code == 0, first.output
    at = MlflowClient().get_run(run_id).data.tags[schema.BILL_AT]
    second = bill("--paid", "120", "--currency", "usd", experiment="billed")
    assert second.exit_code == 0, second.output
    assert "paid 120.00 USD (+10.00 USD, +9.1 %)" in second.output
    assert f"it replaces the bill of 118.40 USD recorded {at}, kept in the run's description" in second.output

    client = MlflowClient()
    run = client.get_run(run_id)
    tags = run.data.tags
    assert (tags[schema.BILL_PAID], tags[schema.BILL_CURRENCY], tags[schema.BILL_NOTE]) == ("120.00", "USD", "")
    assert run.data.metrics[PAID_USD] == 120.0
    assert [(m.step, m.value) for m in client.get_metric_history(run_id, PAID_USD)] == [(1, 118.40), (2, 120.0)]
    note = tags[schema.NOTE]
    assert note.startswith("### Decision: batch8 on NVIDIA GeForce RTX 4090\n\nDecision: batch8.\n\n### Bill history\n")
    assert note.count("### Bill history") == 1
    entries = [line for line in note.splitlines() if line.startswith("- ")]
    assert entries == [f"- {at}: 118.40 USD; invoice 4411", f"- {tags[schema.BILL_AT]}: 120.00 USD"]  # current last
    assert decision_run.latest_bill(client, experiment_id("billed")).paid == Decimal("120.00")


def refused(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [result.output.strip()], result.output
    assert result.output.startswith("Error: ") and message in result.output and "nothing recorded" in result.output


@pytest.mark.parametrize("args, message", [
    (["--paid", "-5", "--currency", "USD"], "--paid must be an amount >= 0 (like 118.40), got '-5'"),
    (["--paid", "118,40", "--currency", "USD"], "--paid must be an amount >= 0 (like 118.40), got '118,40'"),
    (["--paid", "lots", "--currency", "USD"], "--paid must be an amount >= 0"),
    (["--paid", "118.40", "--currency", "EUR"], "--currency 'EUR' is not the plan's currency (USD)"),
    (["--paid", "118.40", "--currency", "USD", "--note", "x" * 501], "--note is 501 characters, at most 500"),
], ids=["negative", "comma", "words", "currency", "long-note"])
def test_bad_input_is_one_line_exit_2_and_the_run_unchanged(store, args, message):
    run_id = logged("billed")
    assert bill("--paid", "118.40", "--currency", "USD", "--note", "first", experiment="billed").exit_code == 0
    before = MlflowClient().get_run(run_id).data
    refused(bill(*args, experiment="billed"), message)
    after = MlflowClient().get_run(run_id).data
    assert after.tags == before.tags and after.metrics == before.metrics
    assert len(MlflowClient().get_metric_history(run_id, PAID_USD)) == 1


def test_an_experiment_without_a_decision_run_is_refused(store):
    MlflowClient().create_experiment("no-report")
    refused(bill("--paid", "118.40", "--currency", "USD", experiment="no-report"),
            "experiment 'no-report' has no decision run: run `gpucost report --experiment no-report` first")


def test_a_latest_decision_run_that_decided_nothing_is_refused_and_the_earlier_plan_not_billed(store):
    earlier = logged("undecided")
    nothing = logged("undecided", decision="none")
    client = MlflowClient()
    before = {run_id: client.get_run(run_id).data.tags for run_id in (earlier, nothing)}
    refused(bill("--paid", "118.40", "--currency", "USD", experiment="undecided"),
            f"the latest decision run {nothing} of experiment 'undecided' decided nothing (no plan was chosen)")
    assert {run_id: client.get_run(run_id).data.tags for run_id in (earlier, nothing)} == before
    assert PAID_USD not in client.get_run(earlier).data.metrics


def test_an_unknown_experiment_is_refused(store):
    result = bill("--paid", "118.40", "--currency", "USD", experiment="nowhere")
    assert result.exit_code == 2 and result.output.startswith("Error: experiment 'nowhere' not found in ")
    assert len(result.output.strip().splitlines()) == 1
