"""The price of measuring (issue 63): a campaign records its machine time (passes, harness, idle) and, given a catalog
that prices its device, that time's cost under the offer's terms; the report says it on the card's Window line and
on the decision run, at the committed plan's offer. Known answers on plain data; one campaign through the CLI."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.campaign.measuring import Measuring, from_hours, session
from gpucost_mlflow.core.money import measuring_price
from gpucost_mlflow.core.money.billing import HourlyTerms, PerTokenTerms
from gpucost_mlflow.core.money.catalog import Package
from gpucost_mlflow.core.money.measuring_price import INSIDE_PACKAGE, PER_TOKEN, Spent, at_offers, at_plan
from gpucost_mlflow.core.money.plans import plan_for
from gpucost_mlflow.report import card, decided, measuring
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.campaign_run import CampaignRun, Opening
from tests.helpers import VARIANTS, write_protocol
from tests.synthetic_report import CPU, decided_report


def _row(billing: str = "hourly", price: str = "0.10", days: int | None = None, terms=None, gpu: str = "cpu"
         ) -> Package:
    terms = terms if terms is not None else (HourlyTerms(Decimal(1), Decimal(1)) if billing == "hourly" else None)
    return Package("cloud", "2026-12-01", gpu, (CPU,), 1, days, Decimal(price), "USD", "quote", 2, billing, terms)


@pytest.mark.unit
def test_a_sessions_machine_time_is_its_wall_its_passes_walls_their_timed_parts_and_the_idle_between():
    # 400 s of wall, two passes of 100 and 200 s whose timed parts are 60 and 100 s: idle 100 s outside both,
    # harness 240 s outside the timed parts (the idle included, as harness_overhead_s_per_pass counts it).
    found = session(400.0, [100.0, 200.0], [{"pass_s": 50.0, "load_s": 10.0}, {"pass_s": 100.0}])
    assert (found.wall_s, found.passes_s, found.timed_s, found.idle_s, found.harness_s) == (400, 300, 160, 100, 240)
    hours = found.in_hours()
    assert hours["wall"] == pytest.approx(400 / 3600) and hours["idle"] == pytest.approx(100 / 3600)
    assert hours["wall"] == pytest.approx(hours["passes"] + hours["idle"])
    # a resumed campaign adds its second session to what the first recorded, read back from its hours
    again = from_hours(*(hours[k] for k in ("wall", "passes", "harness"))).plus(session(36.0, [30.0], [{"pass_s": 20}]))
    assert again.wall_s == pytest.approx(436) and again.passes_s == pytest.approx(330)
    assert again.timed_s == pytest.approx(180) and Measuring().hours == 0


@pytest.mark.unit
def test_hourly_terms_price_the_measuring_as_a_rental_of_its_own_minimum_and_increment_applied():
    # 0.11 h at 0.10 USD/h, min 1 h per 1 h: 1 h billed, 0.10 USD.
    plan = plan_for(_row(), Decimal("7.6"), 1)
    assert at_plan(plan, 0.11) == measuring_price.Price(Decimal("0.10"), "USD", "0.10 USD at this offer")
    # 1.3 h at 2.00 USD/h, min 1 h per 0.5 h: 1.5 h billed, 3.00 USD; two GPUs of one-GPU lots: twice that.
    halves = _row(price="2.00", terms=HourlyTerms(Decimal(1), Decimal("0.5")))
    assert at_plan(plan_for(halves, Decimal(10), 1), 1.3).amount == Decimal("3.00")
    assert at_plan(plan_for(halves, Decimal(10), 2), 1.3).amount == Decimal("6.00")


@pytest.mark.unit
def test_a_package_holds_the_measuring_unless_the_window_and_it_outgrow_the_periods_bought():
    week = _row("package", "90.00", days=7)
    plan = plan_for(week, Decimal(50), 1)  # one 7-day period: 168 h for a 50 h window
    inside = at_plan(plan, 0.11)
    assert inside.amount is None and inside.words == INSIDE_PACKAGE
    outgrown = at_plan(plan, 120)  # 50 + 120 h > 168 h: a second period
    assert outgrown.amount == Decimal("90.00")
    assert outgrown.words == ("90.00 USD at this offer: 1 more 7-day period, the package does not hold the window "
                              "and it")


@pytest.mark.unit
def test_a_per_token_offer_prices_tokens_never_machine_time():
    tier = _row("per_token", "0", terms=PerTokenTerms(Decimal("0.15"), Decimal("0.60"), "list"))
    plan = replace(plan_for(_row(), Decimal(1), 1), offer=tier)
    found = at_plan(plan, 0.11)
    assert found.amount is None and found.words == PER_TOKEN == ("not priced: a per-token offer bills tokens, not "
                                                                  "machine time")
    assert at_offers([tier], 0.11).words == PER_TOKEN


@pytest.mark.unit
def test_a_campaign_is_priced_at_its_devices_cheapest_hourly_row_or_says_why_not():
    dear, cheap = _row(price="0.50"), _row(price="0.10")
    found = at_offers([dear, cheap, _row("package", "90.00", days=7)], 0.11)
    assert found.amount == Decimal("0.10")
    assert found.words.startswith("cpu hourly, 1 lot, 1 h billed (min 1 h, per 1 h)")
    packages = at_offers([_row("package", "90.00", days=7)], 0.11)
    assert packages.amount is None and "inside the package" in packages.words
    assert at_offers([], 0.11, device="NVIDIA L4", currency="EUR") == measuring_price.Price(
        None, "EUR", "not priced: no catalog row for NVIDIA L4")


@pytest.mark.unit
def test_the_report_sums_the_hours_its_campaigns_recorded_and_counts_those_that_recorded_none():
    table = pd.DataFrame({"campaign_id": ["c1", "c1", "c2", "c3", None], "device": ["L4", "L4", "A10G", "L4", "L4"]})
    found = measuring.spent(table, {"c1": 0.05, "c2": 0.06})
    assert found == Spent(pytest.approx(0.11), 2, 1, ("A10G", "L4"))
    assert measuring.spent(table, {}) is None  # a store written before campaigns recorded their hours
    price = measuring_price.Price(Decimal("0.10"), "USD", "0.10 USD at this offer")
    assert Spent(0.11, 1).words(price) == "decided after 0.11 h of measuring (0.10 USD at this offer)"
    assert found.words(price) == ("decided after at least 0.11 h of measuring on 2 devices (0.10 USD were it all at "
                                  "this offer; 1 campaign recorded none)")
    assert Spent(0.0042, 1).words(None) == "decided after 0.0042 h of measuring"


@pytest.mark.unit
def test_a_decided_card_says_how_long_the_measuring_took_and_its_price_at_the_committed_offer():
    # the synthetic report commits cpu hourly at 0.50 USD/h, min 1 h per 1 h: 0.11 h of measuring bills 1 h, 0.50 USD
    report = decided_report(figures=False)
    spent = Spent(0.11, 1, 0, (CPU,))
    report = replace(report, spent=spent, spent_price=measuring.priced(spent, report.choice))
    window = dict(card.lines(report))["Window"]
    assert window.endswith("deadline 2026-10-02T05:00 (met); decided after 0.11 h of measuring (0.50 USD at this "
                           "offer)")
    assert len(card.lines(report)) == card.LINES
    assert decided.measuring_figures(report) == {"measuring_h": 0.11, "measuring_cost_usd": 0.5}
    run = decided.decided(replace(report, attempts=report.attempts.assign(campaign_id="c1")), {}, {"c1": "r1"})
    assert run.metrics["measuring_h"] == 0.11 and run.metrics["measuring_cost_usd"] == 0.5
    assert run.tags[schema.MEASURING_PRICED] == "0.50 USD at this offer"
    # not priced (a per-token offer, a package that holds it): the hours stay, the money is left out, never 0
    unpriced = replace(report, spent_price=measuring_price.Price(None, "USD", INSIDE_PACKAGE))
    assert decided.measuring_figures(unpriced) == {"measuring_h": 0.11}
    assert dict(card.lines(unpriced))["Window"].endswith("(inside the committed package)")
    assert "measuring" not in dict(card.lines(replace(report, spent=None)))["Window"]


@pytest.mark.unit
def test_a_resumed_campaign_run_adds_its_session_to_what_its_earlier_ones_recorded(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("measuring")
    run = CampaignRun.open(client, experiment_id, Opening("c1", "c1", ["a"], 1, "digest", "policy", []))
    first = run.record_measuring(session(360.0, [300.0], [{"pass_s": 240.0}]),
                                 measuring_price.Price(Decimal("0.10"), "USD", "0.10 USD at cpu hourly"))
    assert first.hours == pytest.approx(0.1)
    again, _ = CampaignRun.find(client, experiment_id, "c1")
    total = again.record_measuring(session(36.0, [30.0], [{"pass_s": 24.0}]))
    metrics = client.get_run(run.run_id).data.metrics
    assert metrics[schema.MEASURING_HOURS] == pytest.approx(0.11) == pytest.approx(total.hours)
    assert metrics[schema.MEASURING_PASSES_HOURS] == pytest.approx(0.09167, rel=1e-4)
    assert metrics[schema.MEASURING_IDLE_HOURS] == pytest.approx(0.01833, rel=1e-3)
    assert metrics[schema.MEASURING_HARNESS_HOURS] == pytest.approx((396 - 264) / 3600, rel=1e-4)
    assert metrics["measuring_cost_usd"] == 0.1


@pytest.mark.integration
def test_a_campaign_records_its_machine_time_and_its_price_at_the_catalogs_hourly_row(store, tmp_path, corpus_dir,
                                                                                       model_dir):
    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 1"))
    catalog = tmp_path / "machine.csv"
    runner = CliRunner()
    assert runner.invoke(main, ["catalog", "example", "--out", str(catalog), "--price-per-hour", "0.10",
                                "--device", "cpu"]).exit_code == 0
    result = runner.invoke(main, [
        "campaign", "--variants", "batch1", "--passes", "1", "--corpus", str(corpus_dir / "comparison.jsonl"),
        "--model", str(model_dir), "--variants-file", str(VARIANTS), "--protocol", str(protocol),
        "--experiment", "priced", "--catalog", str(catalog)])
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    parent = client.search_runs([client.get_experiment_by_name("priced").experiment_id],
                                filter_string=f"tags.`{schema.ROLE}` = 'campaign'")[0]
    metrics = parent.data.metrics
    assert 0 < metrics[schema.MEASURING_PASSES_HOURS] <= metrics[schema.MEASURING_HOURS]
    assert metrics[schema.MEASURING_HOURS] == pytest.approx(metrics[schema.MEASURING_PASSES_HOURS]
                                                            + metrics[schema.MEASURING_IDLE_HOURS], rel=1e-3)
    idle, harness = metrics[schema.MEASURING_IDLE_HOURS], metrics[schema.MEASURING_HARNESS_HOURS]
    assert idle <= harness <= metrics[schema.MEASURING_HOURS]
    assert metrics["measuring_cost_usd"] == 0.1  # a few seconds at 0.10 USD/h, min 1 h: 0.10 USD
    priced = parent.data.tags[schema.MEASURING_PRICED]
    assert priced.startswith("this-machine hourly, 1 lot, 1 h billed (min 1 h, per 1 h)")
    assert "measuring: " in result.output and "1 h billed" in result.output
