"""One decision over several GPU types (issue 50, docs/costs.md "Noise across devices"): stores written through the
project's own writer, priced from a SkyPilot import (per-second billing, a 60 s minimum), each with a known answer.
The cheaper configuration is undecided only when, priced at the slowest pass of the two, it costs more than its own
plan and no less than the other's; an undecided card rents one device and runs a configuration of that device."""

from __future__ import annotations

import datetime as dt
import re
import shlex
from decimal import Decimal
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.money import market
from gpucost_mlflow.core.money.choice import doubt
from gpucost_mlflow.core.money.market import Offer
from gpucost_mlflow.report import card, render
from gpucost_mlflow.tracking import schema
from tests.helpers import log_report
from tests.scenario import EXPERIMENT, report
from tests.test_fleet import fake_sky  # noqa: F401 - the stand-in `sky`, a fixture
from tests.test_report import protocol_like_shipped

pytestmark = pytest.mark.unit

L4, A10G, T4, H100 = "NVIDIA L4", "NVIDIA A10G", "Tesla T4", "NVIDIA H100 80GB HBM3"
OFFERS = {
    L4: Offer("aws", "g6.xlarge", "us-east-1", "L4", 1, 24.0, Decimal("0.8048"), None),
    A10G: Offer("aws", "g5.xlarge", "us-east-1", "A10G", 1, 24.0, Decimal("1.006"), None),
    T4: Offer("aws", "g4dn.xlarge", "us-east-1", "T4", 1, 16.0, Decimal("0.526"), None),
    H100: Offer("aws", "p5.4xlarge", "us-east-1", "H100", 1, 80.0, Decimal("6.88"), None),
}
# The store: the same variant on two GPU types, five passes each, durations overlapping, 2,000 corpora.
L4_PASSES = (10.0, 10.2, 10.4, 10.6, 10.8)
A10G_PASSES = (9.8, 10.2, 10.6, 10.9, 11.2)


AGED = f"price as of 2026-11-28 ({(dt.datetime.now(dt.timezone.utc).date() - dt.date(2026, 11, 28)).days} days)"


def sky_catalog(tmp_path: Path, *devices: str, prices: dict[str, str] | None = None) -> Path:
    """A catalog imported from SkyPilot's AWS offers of these devices, on AWS's billing terms (per second, 60 s
    minimum); `prices`: another on-demand price per device."""
    offers = [Offer(**{**OFFERS[d].__dict__, "price": Decimal(prices[d])}) if prices and d in prices else OFFERS[d]
              for d in devices]
    text = market.catalog_text(offers, version="skypilot-v8-2026-11-28", source="SkyPilot catalog",
                               as_of={"aws": dt.date(2026, 11, 28)},
                               names=market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES)]),
                               terms=market.load_terms(shipped.shipped(shipped.BILLING_TERMS)), interruptions=None)
    path = tmp_path / "sky.csv"
    path.write_text(text.text)
    return path


def protocol(tmp_path: Path) -> Path:
    """The shipped protocol for 2,000 corpora, half an hour of setup, no deadline."""
    path = protocol_like_shipped(tmp_path, drop_deadline=True, expected=2000)
    path.write_text(path.read_text().replace("setup_hours: 4 ", "setup_hours: 0.5 ").replace(
        "planned_restarts: 1 ", "planned_restarts: 0 "))
    return path


def write(experiment, passes: dict[tuple[str, str], tuple[float, ...]]) -> None:
    """Every configuration's passes in rotated rounds, one attempt after another."""
    for index in range(max(len(values) for values in passes.values())):
        for (variant, device), values in passes.items():
            if index < len(values):
                experiment(variant, device, values[index])


def committed(built) -> dict[str, Decimal]:
    return {a.configuration.name: a.committed for a in built.assessments}


def rented_and_run(built) -> tuple[tuple[str, ...], str]:
    """The devices the card's Rent plan is a row for, and the device of the configuration its Run line names."""
    choice = built.choice
    if choice.decided:
        return choice.chosen[0].plan.offer.device_names, choice.chosen[0].configuration.device
    found = doubt(choice.undecided)
    return found.plan.offer.device_names, found.fastest.configuration.device


def test_a_gpu_cheaper_whatever_the_noise_is_decided(experiment, tmp_path):
    # L4 at A10G's slowest pass (11.2 s + 0.3 s of evaluation and export per corpus): 0.52 h + 2,000 x 11.5 s =
    # 6.91 h x 0.8048 = 5.56 USD, below A10G's own plan (6.91 h x 1.006 = 6.95): cheaper whatever the noise.
    write(experiment, {("batch8", L4): L4_PASSES, ("batch8", A10G): A10G_PASSES})
    built, _ = report(sky_catalog(tmp_path, L4, A10G), protocol(tmp_path))
    assert committed(built) == {f"batch8 on {L4}": Decimal("5.38"), f"batch8 on {A10G}": Decimal("6.95")}
    assert not built.separations or not any(s.decided for _, s in built.separations)
    assert built.decision.startswith(f"Decision: batch8 on {L4}, l4 hourly, 1 lot, 6.6889 h billed (min 60 s, per 1 s) "
                                     "on aws g6.xlarge in us-east-1: 5.38 USD")
    lines = dict(card.lines(built))
    assert lines["Rent"].endswith(f"on aws g6.xlarge in us-east-1, at 0.8048 USD per lot-hour; {AGED}")
    assert lines["Run"].startswith("batch8 on L4 (no cost per result yet")
    assert lines["Runner-up"] == ("batch8 on A10G at 6.95 USD (1.57 USD more, +29.2 %): 1.006 USD per lot-hour for "
                                  "6 h 55 min billed against 0.8048 USD per lot-hour for 6 h 41 min")
    devices, run = rented_and_run(built)
    assert run == L4 and L4 in devices


def test_a_close_call_across_devices_is_undecided_and_its_card_keeps_to_one_device(experiment, tmp_path):
    # At 0.80 USD/h the A10G plan commits 6.91 h x 0.80 = 5.53 USD; the L4, priced at the A10G's slowest pass, 5.56:
    # not less, so which is cheaper depends on noise. Rent: the L4, whose own plan (5.38) is the cheaper of the two.
    write(experiment, {("batch8", L4): L4_PASSES, ("batch8", A10G): A10G_PASSES})
    built, _ = report(sky_catalog(tmp_path, L4, A10G, prices={A10G: "0.80"}), protocol(tmp_path))
    assert built.decision.startswith(f"No decision: undecided between batch8 on {L4} at 5.38 USD and batch8 on {A10G} "
                                     "at 5.53 USD")
    lines = card.lines(built)
    assert lines[1:4] == [
        ("Rent", ("5.38 USD committed for l4 hourly, 1 lot, 6 h 41 min billed (min 60 s, per 1 s) on aws g6.xlarge in "
                  "us-east-1: it covers the slowest pass of every undecided configuration on L4; on the group's other "
                  "device, batch8 on A10G would commit 5.53 USD (a10g hourly, 1 lot, 6 h 55 min billed (min 60 s, per 1 s) "
                  f"on aws g5.xlarge in us-east-1); {AGED}")),
        ("Run", "batch8 on L4, the fastest median (10.400 s), or any of them on L4: the plan covers each"),
        ("In doubt", ("0.00 USD on L4: the plan is its one undecided configuration's own (batch8 on L4 at 5.38 USD); "
                      "every other device's covering plan costs more")),
    ]
    devices, run = rented_and_run(built)
    assert run == L4 and L4 in devices
    # The decision run says the same: its tags, its money in doubt and its description keep to the L4.
    client = MlflowClient()
    run = client.get_run(log_report(built, {}, client))
    assert run.data.tags[schema.DECISION_RENT_DEVICE] == L4 and run.data.tags[schema.DECISION_RUN] == f"batch8 on {L4}"
    assert run.data.tags[schema.DECISION_RENT_OFFER].endswith("on aws g6.xlarge in us-east-1: 5.38 USD")
    assert run.data.metrics["in_doubt_usd"] == 0.0
    note = run.data.tags[schema.NOTE]
    assert f"- **Rent:** {lines[1][1]}" in note and f"- **Run:** {lines[2][1]}" in note


def test_three_devices_one_undecided_group_rents_the_device_whose_own_plan_is_cheapest(experiment, tmp_path):
    # T4 at 0.80 USD/h (slowest 11.0 s): 5.44 USD; the L4 at that pass 5.47, not less: T4 joins the group, as the A10G.
    write(experiment, {("batch8", L4): L4_PASSES, ("batch8", A10G): A10G_PASSES,
                       ("batch8", T4): (10.0, 10.3, 10.5, 10.7, 11.0)})
    built, _ = report(sky_catalog(tmp_path, L4, A10G, T4, prices={A10G: "0.80", T4: "0.80"}), protocol(tmp_path))
    assert {a.configuration.device for a in built.choice.undecided} == {L4, T4, A10G}
    found = doubt(built.choice.undecided)
    assert found.rent.configuration.device == L4 and found.plan.total == Decimal("5.38")
    assert [(d.device, d.plan.total) for d in found.elsewhere] == [(T4, Decimal("5.44")), (A10G, Decimal("5.53"))]
    rent = dict(card.lines(built))["Rent"]
    assert ("on the group's other devices, batch8 on Tesla T4 would commit 5.44 USD (t4 hourly" in rent
            and "; batch8 on A10G would commit 5.53 USD (a10g hourly" in rent)
    devices, run = rented_and_run(built)
    assert run == L4 and L4 in devices


def test_a_faster_but_dearer_device_whose_durations_separate_is_not_chosen_and_costs_more(experiment, tmp_path):
    # H100 at 6.88 USD/h: five times faster (2.0-2.1 s), yet 12.69 USD; it separates from both, the L4 is chosen.
    write(experiment, {("batch8", L4): L4_PASSES, ("batch8", A10G): A10G_PASSES,
                       ("batch8", H100): (2.0, 2.1, 2.05, 2.02, 2.08)})
    built, _ = report(sky_catalog(tmp_path, L4, A10G, H100), protocol(tmp_path))
    assert committed(built)[f"batch8 on {H100}"] == Decimal("12.69")
    assert built.decision.startswith(f"Decision: batch8 on {L4},")
    assert [a.configuration.device for a in built.choice.others] == [A10G, H100]
    devices, run = rented_and_run(built)
    assert run == L4 and L4 in devices


def test_a_settle_that_spans_two_devices_runs_each_devices_share_and_reads_the_decision_once_both_reported(
        experiment, tmp_path, monkeypatch):
    """`gpucost campaign --settle` on each machine of the group: the campaign stands in (real passes elsewhere),
    writing each device's next passes with the tags the stage gives them."""
    from gpucost_mlflow.cli import main, passes
    from gpucost_mlflow.flow import campaign
    from tests.helpers import VARIANTS, cli_runner
    from tests.scenario import lock_to

    path = protocol(tmp_path)
    path.write_text(path.read_text() + "settle: {max_passes_per_variant: 8}\n")
    experiment_id = lock_to(path)
    write(experiment, {("batch8", L4): L4_PASSES, ("batch8", A10G): A10G_PASSES})
    catalog = sky_catalog(tmp_path, L4, A10G, prices={A10G: "0.80"})
    runs, here = [], {"device": L4}
    later = {L4: (10.1, 10.3, 10.5), A10G: (11.0, 11.1, 11.2)}

    def stage_campaign(plan, display=None):
        runs.append((here["device"], list(plan.variants), plan.passes))
        for seconds in later[here["device"]][:plan.passes]:
            experiment("batch8", here["device"], seconds, tags_extra=dict(plan.tags))
        return campaign.CampaignResult("c" + here["device"][-2:].lower(), "", experiment_id=experiment_id)

    monkeypatch.setattr(campaign, "run_campaign", stage_campaign)
    monkeypatch.setattr(passes, "_device_here", lambda: here["device"])
    (tmp_path / "corpus.jsonl").write_text('{"id": "1", "text": "a", "label": "fresh"}\n')
    (tmp_path / "model").mkdir()
    args = ["campaign", "--settle", "--experiment", EXPERIMENT, "--protocol", str(path), "--variants-file",
            str(VARIANTS), "--catalog", str(catalog), "--corpus", str(tmp_path / "corpus.jsonl"), "--model",
            str(tmp_path / "model")]

    on_l4 = cli_runner().invoke(main, args)
    assert on_l4.exit_code == 0, on_l4.output
    assert runs == [(L4, ["batch8"], 3)]  # only the L4's configuration, to the stage's 8 passes
    (elsewhere,) = [line for line in on_l4.output.splitlines() if line.startswith(f"on {A10G}: ")]
    assert f"`gpucost campaign --settle --experiment scenario --protocol {path}" in elsewhere
    assert "runs batch8 there (3 more pass(es) each)" in elsewhere
    (read,) = [line for line in on_l4.output.splitlines() if line.startswith("decision after the second stage")]
    assert f"No decision: the second stage has not reported from every device (no result yet from {A10G}" in read
    built, _ = report(catalog, path)
    assert dict(card.lines(built))["No decision"].startswith(
        f"the second stage has not reported from every device (no result yet from {A10G}: its stage is still running")

    here["device"] = A10G
    on_a10g = cli_runner().invoke(main, args)
    assert on_a10g.exit_code == 0, on_a10g.output
    assert on_a10g.output.startswith(f"second stage in progress: 8 passes per configuration on {L4}, {A10G}")
    assert runs[1] == (A10G, ["batch8"], 3)
    (read,) = [line for line in on_a10g.output.splitlines() if line.startswith("decision after the second stage")]
    assert f"(read once): No decision: undecided between batch8 on {L4} at " in read  # 8 passes each still overlap

    again = cli_runner().invoke(main, args)  # the stage has run to the protocol's ceiling: nothing more to run
    assert again.exit_code == 0 and "nothing to settle: " in again.output and "already have 8 passes" in again.output
    assert len(runs) == 2


@pytest.mark.usefixtures("fake_sky")
def test_a_fleet_settle_launches_one_job_per_device_each_running_its_share_and_the_decision_waits_for_both(
        experiment, store, tmp_path, monkeypatch):
    """`gpucost fleet launch --settle` through the stand-in `sky` (launches recorded, not run); each job's side is
    `gpucost fleet job` with the campaign standing in, writing the device's next passes with the tags it is given."""
    import yaml

    from gpucost_mlflow.cli import main
    from gpucost_mlflow.fleet import job
    from gpucost_mlflow.flow import campaign
    from gpucost_mlflow.tracking import store as store_module
    from tests.helpers import cli_runner
    from tests.scenario import lock_to
    from tests.test_fleet import calls, launch_args, plain_inputs

    path = protocol(tmp_path)
    path.write_text(path.read_text() + "settle: {max_passes_per_variant: 8}\n")
    experiment_id = lock_to(path)
    write(experiment, {("batch8", L4): L4_PASSES, ("batch8", A10G): A10G_PASSES})
    catalog = sky_catalog(tmp_path, L4, A10G, prices={A10G: "0.80"})
    monkeypatch.setenv("FAKE_SKY_HOLD", "1")
    monkeypatch.setattr(store_module, "check", lambda: None)
    monkeypatch.setattr(store_module, "client", lambda: MlflowClient(tracking_uri=store))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com")
    corpus, model, _ = plain_inputs(tmp_path)
    args = launch_args(tmp_path, corpus, model, path, "--settle", "--catalog", str(catalog))
    args[args.index("--gpus"):args.index("--gpus") + 2] = []
    args[args.index("--experiment") + 1] = EXPERIMENT
    launched = cli_runner().invoke(main, args)
    assert launched.exit_code == 0, launched.output
    assert f"{L4} (L4): batch8, 3 more pass(es) each" in launched.output
    assert f"{A10G} (A10G): batch8, 3 more pass(es) each" in launched.output
    assert [c["job_name"].rsplit("-", 1)[1] for c in calls(tmp_path / "sky") if c["call"] == "jobs.launch"] == ["l4", "a10g"]
    runs = {p.stem.rsplit("-", 1)[1]: yaml.safe_load(p.read_text())["run"] for p in (tmp_path / "out").glob("*.yaml")}
    assert "--gpu L4 --experiment scenario --variants batch8 --passes 3 --settle-plan" in runs["l4"]
    assert "--gpu A10G --experiment scenario --variants batch8 --passes 3 --settle-plan" in runs["a10g"]
    fleet_id = re.search(r"fleet (f[0-9a-f]{10}) launched", launched.output).group(1)
    words = shlex.split(next(line for line in runs["l4"].splitlines() if "fleet job" in line))
    settle_plan = words[words.index("--settle-plan") + 1]

    planned = []

    def stage_campaign(plan, display=None):
        device = {"L4": L4, "A10G": A10G}[plan.tags[schema.FLEET_GPU]]
        planned.append((device, list(plan.variants), plan.passes, plan.stage))
        monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
        for seconds in {L4: (10.1, 10.3, 10.5), A10G: (11.0, 11.1, 11.2)}[device][:plan.passes]:
            experiment("batch8", device, seconds, tags_extra=dict(plan.tags))
        return campaign.CampaignResult("c" + device[-2:].lower(), "", experiment_id=experiment_id)

    monkeypatch.setattr(job, "run_campaign", stage_campaign)
    for gpu in ("L4", "A10G"):
        ran = cli_runner().invoke(main, ["fleet", "job", "--fleet", fleet_id, "--gpu", gpu, "--settle-plan", settle_plan,
                                         "--variants", "batch8", "--passes", "3", "--experiment", EXPERIMENT,
                                         "--protocol", str(path), "--corpus", str(corpus), "--model", str(model)])
        assert ran.exit_code == 0, ran.output
        built, _ = report(catalog, path)
        if gpu == "L4":  # the A10G's share has not reported: no decision is read
            assert built.decision.startswith(f"No decision: the second stage has not reported from every device (no "
                                             f"result yet from {A10G}")
    assert [p[:3] for p in planned] == [(L4, ["batch8"], 3), (A10G, ["batch8"], 3)] and planned[0][3] == "settle"
    assert built.decision.startswith(f"No decision: undecided between batch8 on {L4} at ")  # read once, both in
    assert "has not reported" not in built.decision


def test_an_undecided_group_across_devices_says_how_to_settle_on_each(experiment, tmp_path):
    path = protocol(tmp_path)
    path.write_text(path.read_text() + "settle: {max_passes_per_variant: 8}\n")
    from tests.scenario import lock_to

    lock_to(path)
    write(experiment, {("batch8", L4): L4_PASSES, ("batch8", A10G): A10G_PASSES})
    catalog = sky_catalog(tmp_path, L4, A10G, prices={A10G: "0.80"})
    built, _ = report(catalog, path)
    assert built.settle.startswith(f"`gpucost fleet launch --settle --experiment scenario --protocol {path} --catalog "
                                   f"{catalog} --max-hours H --max-cost USD` runs each device's own configurations on "
                                   f"its GPU type ({L4}, {A10G}), or `gpucost campaign --settle")


def test_a_stage_left_open_holds_only_its_choosable_configurations_undecided_and_names_the_missing_device():
    from gpucost_mlflow.core.money.choice import STAGE_OPEN, await_stage
    from tests.synthetic_report import CPU, decided_report

    report_ = decided_report(figures=False)
    held = await_stage(report_.choice, report_.assessments, {CPU: ("batch8", "batch8-int8"), A10G: ("batch8",)}, [A10G])
    assert held.none == STAGE_OPEN and not held.decided
    assert [a.configuration.variant for a in held.undecided] == ["batch8"]  # batch8-int8 was rejected: never held
    assert f"no result yet from {A10G}" in held.detail
    assert await_stage(report_.choice, report_.assessments, {CPU: ("batch8",)}, []) is report_.choice


PACKAGES = """provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source
lab,2026-12-01,gpua,GPU A,1,7,110,USD,flat package price
lab,2026-12-01,gpub,GPU B,1,7,110,USD,flat package price
"""


def test_a_tie_at_one_package_price_across_two_gpus_rents_one_and_names_the_other_with_its_own_plan(
        experiment, tmp_path):
    # Two GPUs on 7-day packages at the same 110 USD, passes that overlap: each configuration commits 110.00 USD.
    # A plan rents one device: GPU A, whose batch8 has the faster median (10.4 s against 10.6 s), is rented and run;
    # GPU B is named as an equal alternative with its own plan, never folded into one "any of 2 tied".
    write(experiment, {("batch8", "GPU A"): L4_PASSES, ("batch8", "GPU B"): A10G_PASSES})
    catalog = tmp_path / "packages.csv"
    catalog.write_text(PACKAGES)
    built, _ = report(catalog, protocol_like_shipped(tmp_path))
    assert committed(built) == {"batch8 on GPU A": Decimal("110.00"), "batch8 on GPU B": Decimal("110.00")}
    assert [a.configuration.device for a in built.choice.chosen] == ["GPU A"]
    assert [a.configuration.device for a in built.choice.equal] == ["GPU B"]
    lines = dict(card.lines(built))
    assert lines["Rent"].startswith("110.00 USD committed for 1 x 7-day gpua package")
    assert lines["Run"].startswith("batch8 on GPU A (") and "tied" not in lines["Run"]
    assert lines["Runner-up"].startswith(
        "equal in cost on another device, not separated (a plan rents one device: the faster median picks it): "
        "batch8 on GPU B, 110.00 USD committed for 1 x 7-day gpub package")
    devices, run = rented_and_run(built)
    assert run == "GPU A" and devices == ("GPU A",)
    assert built.decision.startswith("Decision: batch8 on GPU A, 1 x 7-day gpua package")
    assert "equal in cost on another device" in built.decision and "batch8 on GPU B, 110.00 USD" in built.decision
    client = MlflowClient()
    run = client.get_run(log_report(built, {}, client))
    tags = run.data.tags
    assert tags[schema.DECISION_DEVICE] == "GPU A" and tags[schema.DECISION_RUN] == "batch8 on GPU A"
    assert tags[schema.DECISION_RENT_DEVICE] == "GPU A" and tags[schema.DECISION_RENT_OFFER].startswith("1 x 7-day gpua")
    assert tags[schema.DECISION_EQUAL].startswith("batch8 on GPU B: 1 x 7-day gpub package")
    assert "equal in cost on another device" in tags[schema.NOTE] and " or " not in run.info.run_name


def test_at_equal_medians_the_tie_across_devices_rents_the_device_of_the_first_name(experiment, tmp_path):
    write(experiment, {("batch8", "GPU B"): L4_PASSES, ("batch8", "GPU A"): L4_PASSES})
    catalog = tmp_path / "packages.csv"
    catalog.write_text(PACKAGES)
    built, _ = report(catalog, protocol_like_shipped(tmp_path))
    assert [a.configuration.name for a in built.choice.chosen + built.choice.equal] == [
        "batch8 on GPU A", "batch8 on GPU B"]


def test_a_two_device_card_says_each_offers_rate_and_price_the_windows_parts_and_one_end_in_one_zone(experiment,
                                                                                                    tmp_path):
    # Issue 66's held-out store: batch8 on an L4 (0.8048 USD/h) and on the faster-at-best A10G (1.006 USD/h), five
    # passes of about two hours each, one deliverable, the shipped protocol (4 h setup, its start long past). The card
    # says why the L4 wins (its rate against the A10G's), what the 12.5 h of work are (10.4 h of comparison passes,
    # 2.1 h for the deliverable), one end time in the deadline's zone, and billed hours in hours and minutes.
    write(experiment, {("batch8", L4): tuple(720 * s for s in L4_PASSES),
                       ("batch8", A10G): tuple(720 * s for s in A10G_PASSES)})
    built, _ = report(sky_catalog(tmp_path, L4, A10G), protocol_like_shipped(tmp_path, expected=1))
    lines = dict(card.lines(built))
    assert lines["Rent"].startswith("13.33 USD committed for l4 hourly, 1 lot, 16 h 34 min billed (min 60 s, per 1 s) "
                                    "on aws g6.xlarge in us-east-1, at 0.8048 USD per lot-hour; price as of")
    assert lines["Runner-up"] == ("batch8 on A10G at 16.89 USD (3.56 USD more, +26.7 %): 1.006 USD per lot-hour for "
                                  "16 h 47 min billed against 0.8048 USD per lot-hour for 16 h 34 min")
    window = lines["Window"]
    assert window.startswith("16.5 h forecast (4.0 h declared setup and waiting, 10.4 h comparison passes, 2.1 h for 1 "
                             "deliverable), 16.6 h at the slowest pass, ends by ")
    ends = re.findall(r"ends by (\S+)", window)
    assert len(ends) == 1 and ends[0].endswith("+01:00") and "if started now (the declared start is past)" in window
    assert "deadline 2026-12-04T09:00+01:00 (met from the declared start 2026-11-30T09:00+01:00, missed started now)" \
        in window and "+00:00" not in window and "2026-12-01T01:" not in window  # the past end is not said
    assert not re.search(r"\d\.\d{4} h", "\n".join(lines.values()))  # never '16.5689 h billed'
    assert "started now, at every volume" in lines["Would change it"]  # never 'above 0'


def test_a_volume_of_one_corpus_gives_no_degenerate_break_even_and_no_empty_separability_table(experiment, tmp_path):
    write(experiment, {("batch8", L4): tuple(720 * s for s in L4_PASSES),
                       ("batch8", A10G): tuple(720 * s for s in A10G_PASSES)})
    built, _ = report(sky_catalog(tmp_path, L4, A10G), protocol_like_shipped(tmp_path, drop_deadline=True, expected=1))
    assert dict(card.lines(built))["Would change it"] == ("no break-even searched beyond the declared 1 corpus, where "
                                                          "it costs the least")
    page = render.markdown(built)
    assert "from 1 to 1" not in page and "between 1 and 1 " not in page
    assert render.NO_PAIRS in page and "| series | faster |" not in page
