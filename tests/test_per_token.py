"""A hosted API priced per token in its list and batch tiers, beside renting, over the same judged work (billing
`per_token`, docs/costs.md "Per-token tiers"): known answers, refusals in one line, and the report's words."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.breakeven import Priced
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.core.money.choice import NOTHING_PRICED, choose
from gpucost_mlflow.core.money.decision import Assessment, Configuration, Rules, assess
from gpucost_mlflow.report import alternatives, card, sections
from tests.scenario import RTX, report
from tests.test_report import protocol_like_shipped

pytestmark = pytest.mark.unit

HEAD = ("provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,billing,min_hours,"
        "increment_hours,price_per_million_input,price_per_million_output,tier,completion_window_hours\n")
HOSTED = "endpoint api.hosted.example"  # the device of a pass whose work the provider's endpoint did
HOURLY = "cloud,2026-12-01,l4,NVIDIA L4,1,,0.50,USD,quote,hourly,1,1,,,,\n"
LIST = f"hosted,2026-12-01,l4,{HOSTED},1,,,USD,price page,per_token,,,0.15,0.60,list,\n"
BATCH = f"hosted,2026-12-01,l4,{HOSTED},1,,,USD,price page,per_token,,,0.075,0.30,batch,24\n"
# The same tiers as a row naming the L4 a pass ran on here: never a price of that pass's work.
LIST_ON_L4 = LIST.replace(HOSTED, "NVIDIA L4")
BATCH_ON_L4 = BATCH.replace(HOSTED, "NVIDIA L4")
START = dt.datetime(2026, 12, 1, 9)
PLAN = {"setup_hours": 0.5, "waiting_hours": 0, "planned_restarts": 0, "start": START}
LIST_SAID = ("l4 list tier, 0.15/0.60 USD per million input/output tokens: 0.78 USD for 4,000 planned inputs at 500.0 "
             "prompt and 200.0 generated tokens each (measured), at the measured rate")
BATCH_SAID = ("l4 batch tier (24 h completion window), 0.075/0.30 USD per million input/output tokens: 0.39 USD for "
              "4,000 planned inputs at 500.0 prompt and 200.0 generated tokens each (measured), done within 24.5 h "
              "(0.5 h setup + the batch tier's 24 h completion window, the provider's bound)")


def catalog(tmp_path: Path, *rows: str, name: str = "prices.csv") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + "".join(rows), encoding="utf-8")
    return path


def measured(tokens: bool = True, device: str = HOSTED, variant: str = "batch8-hosted") -> Configuration:
    """A variant through the provider's endpoint (or on an L4 here), five 15-minute passes (no start-up, evaluation or
    export), 500 prompt and 200 generated tokens per input counted by its accepted passes (or none)."""
    return Configuration(device, variant, ["accepted"] * 5, Durations((900.0,) * 5), {},
                         input_tokens_per_input=500.0 if tokens else None,
                         output_tokens_per_input=200.0 if tokens else None)


def rules_of(path: Path, deadline_h: float | None = None) -> Rules:
    """4 corpora of 1,000 inputs: a 1.5 h window (0.5 h setup + 4 x 0.25 h) at the measured rate."""
    deadline = START + dt.timedelta(hours=deadline_h) if deadline_h is not None else None
    return Rules(load_catalog(path), PLAN, deadline, 4, required_passes=5, inputs_per_deliverable=1000)


def assessed(path: Path, deadline_h: float | None = None, tokens: bool = True) -> Assessment:
    """The endpoint variant assessed alone."""
    (found,) = assess([measured(tokens)], rules_of(path, deadline_h))
    return found


def test_an_endpoint_variant_is_committed_at_its_providers_batch_tier_over_renting_the_l4_it_would_run_on(tmp_path):
    # 4,000 inputs x (500 x 0.15 + 200 x 0.60) / 1e6 = 0.78 (list); half of it in the batch tier, 0.39; renting the
    # L4 for batch8 bills the 1.5 h window as 2 h at 0.50: 1.00.
    here, hosted = assess([measured(device="NVIDIA L4", variant="batch8"), measured()],
                          rules_of(catalog(tmp_path, HOURLY, LIST, BATCH)))
    assert [p.total for p in hosted.plans] == [Decimal("0.39"), Decimal("0.78")]
    assert [p.describe() for p in hosted.plans] == [BATCH_SAID, LIST_SAID]
    assert hosted.plans[1].window_hours == Decimal("1.5") and hosted.plans[0].window_hours == Decimal("24.5")
    assert [p.total for p in here.plans] == [Decimal("1.00")] and not here.what_if and not hosted.what_if
    choice = choose([here, hosted], deadline_declared=False)
    assert choice.chosen == [hosted] and hosted.committed == Decimal("0.39") and hosted.priced == BATCH_SAID
    assert hosted.spare is None  # a bill per token holds no spare deliverables: each one is paid for


def test_passes_timed_on_a_local_l4_are_never_committed_at_a_hosted_rate_that_names_the_l4(tmp_path):
    # The per-token rows name the L4 the passes ran on, and would price them at 0.39 and 0.78: they are what-ifs,
    # outside the choice, naming what would measure them; the hourly rental of the L4 is committed.
    (here,) = assess([measured(device="NVIDIA L4", variant="batch8")],
                     rules_of(catalog(tmp_path, HOURLY, LIST_ON_L4, BATCH_ON_L4)))
    assert [p.offer.billing for p in here.plans] == ["hourly"] and here.committed == Decimal("1.00")
    assert len(here.what_if) == 2 and all(
        line.startswith("l4 ") and "for batch8 on NVIDIA L4: a what-if outside the choice, never committed: batch8 "
        "was timed and judged on NVIDIA L4, not through hosted's endpoint" in line and "`engine: openai`" in line
        and "gpucost hosted batch-import" in line for line in here.what_if), here.what_if
    assert choose([here], deadline_declared=False).chosen == [here]


def test_with_only_hosted_rows_naming_its_device_a_local_configuration_is_not_priced_and_says_why(tmp_path):
    (here,) = assess([measured(device="NVIDIA L4", variant="batch8")],
                     rules_of(catalog(tmp_path, LIST_ON_L4, BATCH_ON_L4)))
    assert here.plan is None and here.priced == (
        "not priced: only hosted per-token rows name NVIDIA L4 in 2026-12-01, and its passes did not run through "
        "their endpoint (a what-if, never committed)")
    assert choose([here], deadline_declared=False).none == NOTHING_PRICED


def test_a_per_token_commitment_under_a_cent_is_one_cent_never_zero(tmp_path):
    # 4,000 inputs x (500 x 0.0001 + 200 x 0.0001) / 1e6 = 0.00028 USD: committed as 0.01, never "0.00 committed".
    tiny = f"hosted,2026-12-01,l4,{HOSTED},1,,,USD,price page,per_token,,,0.0001,0.0001,list,\n"
    a = assessed(catalog(tmp_path, tiny))
    assert a.committed == Decimal("0.01")


def test_a_batch_tier_whose_completion_window_misses_a_20_hour_deadline_is_infeasible_and_the_list_tier_chosen(
        tmp_path):
    a = assessed(catalog(tmp_path, LIST, BATCH), deadline_h=20)
    assert a.refused == [("l4 batch tier per token (24 h completion window), 0.075/0.30 USD per million input/output "
                          "tokens: infeasible: batch tier's 24 h completion window after 0.5 h setup does not fit the "
                          "20 h deadline")]
    assert [p.total for p in a.plans] == [Decimal("0.78")]
    assert choose([a]).chosen == [a] and a.priced == LIST_SAID and a.meets_deadline


def test_without_measured_tokens_a_per_token_row_is_not_priced_and_says_why_never_0(tmp_path):
    a = assessed(catalog(tmp_path, LIST, BATCH), tokens=False)
    assert a.plans == [] and a.committed is None
    assert [why.split(": ", 1)[1] for why in a.refused] == [
        "not priced per token: no accepted pass counted its prompt tokens (tokens_prompt)"] * 2
    alone = assessed(catalog(tmp_path, LIST, name="tier.csv"), tokens=False)
    assert alone.plan is None and alone.priced == (
        "not priced: l4 list tier per token, 0.15/0.60 USD per million input/output tokens: not priced per token: "
        "no accepted pass counted its prompt tokens (tokens_prompt)")
    assert choose([alone], deadline_declared=False).none == NOTHING_PRICED


def test_a_per_token_cost_grows_with_every_deliverable_where_the_break_even_reads_it(tmp_path):
    a = assessed(catalog(tmp_path, LIST))
    priced = Priced("batch8", a.forecast, tuple(p.offer for p in a.plans), 1, None, a.work)
    assert [priced.cost(volume) for volume in (1, 4, 8)] == [Decimal("0.20"), Decimal("0.78"), Decimal("1.56")]


@pytest.mark.parametrize(("row", "says"), [
    (LIST.replace("0.15,0.60", "0.15,"), ":2: empty price_per_million_output (a per_token row prices input and output"),
    (LIST.replace("0.15,0.60", "-0.15,0.60"), ":2: price_per_million_input '-0.15' is not a price >= 0"),
    (LIST.replace(",list,", ",spot,"), ":2: tier 'spot' is not list or batch"),
    (BATCH.replace(",batch,24", ",batch,"), ":2: empty completion_window_hours (a batch tier's time bound)"),
    (LIST.replace(",list,", ",list,24"), ":2: completion_window_hours is for a batch tier, this row is the list tier"),
    (LIST.replace(",,,USD", ",,2.00,USD"), ":2: price_per_lot must be empty on a per_token row"),
    (HOURLY.replace(",,,,\n", ",,,list,\n"), ":2: tier is for per_token rows, this one is billed hourly"),
])
def test_a_bad_per_token_row_is_refused_in_one_line_naming_file_line_and_column(tmp_path, row, says):
    with pytest.raises(GpucostError) as refused:
        load_catalog(catalog(tmp_path, row))
    assert f"prices.csv{says}" in str(refused.value) and "\n" not in str(refused.value)


def test_the_list_and_batch_tiers_of_one_provider_are_two_rows_not_a_duplicate(tmp_path):
    rows = load_catalog(catalog(tmp_path, LIST, BATCH)).packages
    assert [(p.terms.tier, p.terms.completion_window_hours) for p in rows] == [("list", None), ("batch", Decimal(24))]
    with pytest.raises(GpucostError, match=r":3: duplicate package l4 list tier of hosted \(first at line 2\)"):
        load_catalog(catalog(tmp_path, LIST, LIST))


def test_the_report_commits_the_endpoints_batch_tier_and_shows_the_local_passes_hosted_rows_as_what_ifs(
        experiment, tmp_path):
    tokens = {"tokens_prompt": 500_000.0, "tokens_generated": 200_000.0}  # 500 prompt and 200 generated per input
    for seconds in (100.0, 101.0, 99.0, 100.5, 100.2):
        experiment("batch8", RTX, seconds, metrics_extra=tokens)
        experiment("batch8", HOSTED, seconds, metrics_extra=tokens)
    on_rtx = [row.replace("l4,NVIDIA L4", f"rtx-4090,{RTX}") for row in (HOURLY, LIST_ON_L4, BATCH_ON_L4)]
    built, balance = report(catalog(tmp_path, *on_rtx, LIST, BATCH), protocol_like_shipped(tmp_path, expected=4))
    (chosen,) = built.choice.chosen
    assert chosen.configuration.device == HOSTED and chosen.committed == Decimal("0.39")  # 28 h fits the 96 h deadline
    label, rent = card.lines(built)[0]
    assert label == "Pay per token" and rent.startswith(
        "0.39 USD committed for l4 batch tier (24 h completion window), 0.075/0.30 USD per million input/output "
        "tokens for 4,000 planned inputs at 500.0 prompt and 200.0 generated tokens each (measured), done within 28 h")
    rented = next(a for a in built.assessments if a.configuration.device == RTX)
    assert [p.offer.billing for p in rented.plans] == ["hourly"] and rented.committed == Decimal("2.50")
    (what_if,) = [lines for title, _, lines in built.lists if title == alternatives.ELSEWHERE_TITLE]
    assert len(what_if) == 2 and all(f"for batch8 on {RTX}: a what-if outside the choice" in line for line in what_if)
    table = sections.plan_table(built)
    row = next(r for r in table.rows if r[0] == HOSTED)
    following = row[table.head.index("next plans")]
    assert "l4 list tier, 0.15/0.60 USD per million input/output tokens: 0.78 USD for 4,000 planned inputs" in following
    assert "rtx-4090" not in following  # a plan rents one device: the local rows never follow the endpoint's
    assert row[table.head.index("spare capacity (slowest pass)")] == ""
    assert set(balance["rows_not_priced"]) == {""}  # balance.csv: every row that may price the judged work did
