"""The race a protocol may declare (`race: {from_round: N}`, issue 63): a configuration stops being measured once more
passes cannot make it the choice; the rule on plain data with known answers, its field in the locked protocol, a
demo-protocol campaign raced round by round over recorded attempts, the replay over stores, and a real campaign."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.campaign.race import Race, Runner, Stop, stops, worst_case_passes
from gpucost_mlflow.core.campaign.schedule import rotated
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.catalog import Catalog, example_catalog, load_catalog
from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.decision import Configuration, Rules, assess_one
from gpucost_mlflow.report import standing
from gpucost_mlflow.report.race import stops_after
from gpucost_mlflow.report.sections import decision_table
from gpucost_mlflow.tracking import schema
from tests import scenario
from tests.helpers import ROOT, attempts_table, evidence_of, load_benchmark, write_protocol

DEMO_PROTOCOL = ROOT / "projects" / "protocol-demo.yaml"
EPYC = "AMD EPYC"
START = dt.datetime(2026, 12, 1, 9, tzinfo=dt.timezone.utc)


def raced(path: Path, source: Path = DEMO_PROTOCOL, from_round: int | None = 2) -> Path:
    """A copy of a protocol that declares the race from `from_round` (None: no race, the full design)."""
    document = yaml.safe_load(source.read_text())
    document.pop("race", None)
    if from_round is not None:
        document["race"] = {"from_round": from_round}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def hourly(path: Path) -> Path:
    """The demo's what-if catalog: this CPU by the hour at 0.10 USD."""
    path.write_text(example_catalog(EPYC, Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))
    return path


# The protocol's field: locked with the file, read or refused in one line.

@pytest.mark.unit
def test_the_race_is_a_protocol_field_locked_with_it_and_absent_means_the_full_design(tmp_path):
    full = load_protocol(raced(tmp_path / "full.yaml", from_round=None))
    protocol = load_protocol(raced(tmp_path / "p.yaml"))
    assert full.race_from_round is None and protocol.race_from_round == 2 and protocol.digest != full.digest


@pytest.mark.unit
@pytest.mark.parametrize("declared, says", [
    ("race: 2", "field 'race' must be a mapping with from_round"),
    ("race: {from_round: 0}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {from_round: 1.5}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {from_round: true}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {from_round: 6}", r"must be at most passes_per_variant \(5\)"),
    ("race: {from_rounds: 2}", "unknown field 'race.from_rounds' \\(did you mean 'race.from_round'\\?\\)"),
])
def test_a_bad_race_is_refused_in_one_line(tmp_path, declared, says):
    path = raced(tmp_path / "p.yaml", from_round=None)
    path.write_text(path.read_text() + f"\n{declared}\n")
    with pytest.raises(GpucostError, match=says) as refused:
        load_protocol(path)
    assert "\n" not in str(refused.value)


@pytest.mark.unit
@pytest.mark.parametrize("configs, passes, from_round, expected", [
    (6, 5, None, 30),  # no race: the full design
    (6, 5, 2, 15),  # five stop after 2 rounds, the best runs its 5
    (6, 5, 5, 30),  # a race that looks only at the last round saves nothing
    (1, 5, 2, 5),
    (0, 5, 2, 0),
])
def test_the_fewest_passes_a_race_runs_is_every_configuration_to_its_first_look_and_the_best_to_the_end(
        configs, passes, from_round, expected):
    assert worst_case_passes(configs, passes, from_round) == expected


# The rule on plain data: the demo's job (4,000 corpora of 500 inputs within 96 h, 4 h setup), this CPU at 0.10 USD an
# hour; durations in seconds per corpus.

def rules(tmp_path: Path, priced: bool = True) -> Rules:
    catalog = load_catalog(hourly(tmp_path / "this-machine.csv")) if priced else Catalog("", "none", "", ())
    plan = {"start": START, "setup_hours": 4.0, "waiting_hours": 0.0, "planned_restarts": 0}
    return Rules(catalog, plan, START + dt.timedelta(hours=96), 4000, required_passes=5, max_spread_ratio=1.5,
                 inputs_per_deliverable=500)


def runner(variant: str, seconds: tuple[float, ...], given: Rules, rejections: tuple[str, ...] = (),
           deterministic: bool = True) -> Runner:
    statuses = ["rejected" if rejections else "accepted"] * len(seconds)
    return Runner(assess_one(Configuration(EPYC, variant, statuses, Durations(seconds), {}), given), rejections,
                  deterministic)


RACE = Race(from_round=2, passes=5)


@pytest.mark.unit
def test_a_configuration_several_times_dearer_stops_at_round_two_and_the_best_and_a_close_one_run_on(tmp_path):
    given = rules(tmp_path)
    best = runner("batch8", (5.45, 5.25), given)  # 4 h + 4,000 x 5.45 s = 10.06 h: 11 h billed, 1.10 USD
    close = runner("batch4", (5.7, 5.5), given)  # 10.3 h at its slowest, 9.9 h at its fast end: 1.10 USD at best
    dear = runner("batch1", (20.1, 20.4), given)  # 26.7 h: 2.70 USD at its slowest pass
    # The log-durations' spread pooled over the three (sd 0.022, 3 degrees of freedom), one more pass predicted at
    # 98.3 % (95 % over the 3 rounds a stop may follow) shared over the 3 passes to come: batch1's fast end is 17.41 s,
    # 23.3 h, 2.40 USD; batch8's slow end 6.22 s, 10.9 h, 1.10 USD; batch4's fast end 4.81 s, 1.00 USD.
    found = stops([best, close, dear], [], RACE, 2)
    assert found == [Stop("batch1", EPYC, 2, ("dominated whatever the noise: at best 2.40 USD against 1.10 USD "
                                               "(batch8 on AMD EPYC at its slowest plausible pass)"))]
    assert found[0].line().startswith("stopped batch1 after 2 passes: dominated whatever the noise: at best 2.40 USD")
    assert stops([best, close, dear], [], RACE, 1) == []  # before from_round: only a rejection for good stops
    assert stops([best, close, dear], [], RACE, 5) == []  # after the last round nothing is left to save
    assert stops([best, close, dear], [], Race(2, 5, confidence=0.999999), 2) == []  # a wider interval: not yet
    assert stops([dear], [best.assessment], RACE, 2)[0].variant == "batch1"  # the best may be outside the race


@pytest.mark.unit
def test_one_pass_each_shows_no_spread_so_nothing_is_dominated_whatever_the_noise(tmp_path):
    given = rules(tmp_path)
    assert stops([runner("batch8", (5.45,), given), runner("batch1", (20.1,), given)], [], Race(1, 5), 1) == []


@pytest.mark.unit
@pytest.mark.parametrize("rejections, deterministic, why", [
    (("failed: reference_agreement",), True, ("rejected for good: quality failed: reference_agreement (a "
                                              "deterministic workload: its next pass gives the same outputs)")),
    (("not comparable: max_length",), False, "rejected for good: not comparable: max_length"),
    (("failed: reference_agreement",), False, ""),  # user code: its next pass may give other outputs
    (("not shown: reference_agreement",), True, ""),  # a bar its corpus cannot show: not a failure
])
def test_a_rejection_more_passes_cannot_change_stops_it_after_any_round(tmp_path, rejections, deterministic, why):
    given = rules(tmp_path)
    rejected = runner("batch8-int8", (3.1,), given, rejections, deterministic)
    found = stops([runner("batch8", (5.45,), given), rejected], [], RACE, 1)
    assert found == ([Stop("batch8-int8", EPYC, 1, why)] if why else [])


@pytest.mark.unit
def test_late_whatever_the_noise_stops_without_a_catalog_where_dominance_cannot(tmp_path):
    given = rules(tmp_path, priced=False)
    late = runner("batch1-slow", (120.0, 121.0), given)  # 4 h + 4,000 x ~110 s at its fast end: ~126 h > 96 h
    found = stops([runner("batch8", (5.45, 5.25), given), runner("batch1", (20.1, 20.4), given), late], [], RACE, 2)
    assert [(s.variant, s.reason.split(":")[0]) for s in found] == [("batch1-slow", "late whatever the noise")]
    assert "after the deadline 2026-12-05T09:00+00:00" in found[0].reason


@pytest.mark.unit
def test_a_stopped_configuration_is_measured_and_out_never_under_sampled(tmp_path):
    given = rules(tmp_path)
    config = Configuration(EPYC, "batch1", ["accepted"] * 2, Durations((20.1, 20.4)), {},
                           stopped="dominated whatever the noise: at best 2.50 USD against 1.10 USD")
    a = assess_one(config, given)
    assert not a.feasible and not a.under_sampled
    assert a.feasibility == "stopped by the race: dominated whatever the noise: at best 2.50 USD against 1.10 USD"
    assert standing.role(a, Choice()) == standing.RACED == "stopped by the race"


# A demo-protocol campaign raced round by round over recorded attempts (written through the project's own writer).

DEMO_PASSES = {  # seconds per 500-input corpus, five passes each, in the order the rounds run them
    "batch1": (20.1, 20.4, 20.2, 20.6, 20.3),
    "batch4": (6.1, 6.3, 6.2, 6.4, 6.2),
    "batch8": (5.45, 5.25, 5.45, 5.4, 5.5),
    "batch8-int8": (3.1, 3.0, 3.2, 3.1, 3.0),  # rejected on label agreement, every pass (a deterministic workload)
}
REJECTED = {"status": "rejected", "quality": "failed: reference_agreement",
            "reason": "reference_agreement: label agreement 94.3 % < 97 % (its 95 % interval 92.8-95.6 %)"}


def campaign_over_recorded(write, protocol: Path, catalog: Path, race: bool) -> dict[str, int]:
    """The demo's variants in rotated rounds through the writer, the race asked after each round as a campaign asks
    it (report/race.py over the store's attempts), a stop recorded on the configuration's last pass; the passes
    each variant ran."""
    client, stopped, last, ran = MlflowClient(), set(), {}, dict.fromkeys(DEMO_PASSES, 0)
    slots = rotated(list(DEMO_PASSES), 5)
    for slot in slots:
        if slot.variant in stopped:
            continue
        seconds = DEMO_PASSES[slot.variant][slot.round - 1]
        last[slot.variant] = write(slot.variant, EPYC, seconds, **(REJECTED if slot.variant == "batch8-int8" else {}))
        ran[slot.variant] += 1
        if race and slot.position == len(DEMO_PASSES):  # the round is over
            attempts = evidence_of(scenario.EXPERIMENT).attempts
            for stop in stops_after(attempts, load_protocol(protocol), load_catalog(catalog), slot.round):
                stopped.add(stop.variant)
                client.set_tag(last[stop.variant], schema.RACE_STOPPED, stop.reason)
    return ran


@pytest.mark.unit
def test_a_demo_campaign_under_the_race_stops_the_rejected_and_the_dear_and_reaches_the_full_designs_decision(
        store, tmp_path):
    protocol, catalog = raced(tmp_path / "race.yaml"), hourly(tmp_path / "this-machine.csv")
    full = campaign_over_recorded(scenario.attempt_writer("full"), protocol, catalog, race=False)
    ran = campaign_over_recorded(scenario.attempt_writer(), protocol, catalog, race=True)
    assert full == dict.fromkeys(DEMO_PASSES, 5)
    # batch4, 1.20 USD at its slowest pass against batch8's 1.10, may yet cost batch8's: it runs on
    assert ran == {"batch8-int8": 1, "batch1": 2, "batch4": 5, "batch8": 5}  # the best runs its full 5

    table = attempts_table(scenario.EXPERIMENT)
    stops_of = {variant: set(rows["stopped"]) for variant, rows in table.groupby("variant")}
    assert stops_of["batch8"] == stops_of["batch4"] == {""}
    assert stops_of["batch8-int8"] == {("rejected for good: quality failed: reference_agreement (a deterministic "
                                        "workload: its next pass gives the same outputs)")}
    (dominated,) = stops_of["batch1"]  # on each of its rows
    assert re.fullmatch(r"dominated whatever the noise: at best \d+\.\d\d USD against 1\.\d0 USD \(batch8 on AMD "
                        r"EPYC at its slowest plausible pass\)", dominated), dominated

    built, balance = scenario.report(catalog, protocol)
    without, _ = scenario.report(catalog, raced(tmp_path / "full.yaml", from_round=None), experiment="full")
    head = re.compile(r"Decision: ([^,]+), [^(]+")
    assert head.match(built.decision)[0] == head.match(without.decision)[0]  # the same choice and plan
    assert built.decision.startswith("Decision: batch8 on AMD EPYC")
    words = {a.configuration.variant: standing.role(a, built.choice) for a in built.assessments}
    assert words == {"batch8": "chosen", "batch4": "costs more", "batch1": "stopped by the race",
                     "batch8-int8": "stopped by the race"}
    shown = {row[0]: row[1] for row in decision_table(built).rows}
    assert shown["batch1 on AMD EPYC"] == f"stopped by the race: {dominated}"
    assert "under-sampled" not in built.decision
    feasibility = dict(zip(balance["variant"], balance["feasibility"]))
    assert feasibility["batch1"] == f"stopped by the race: {dominated}"  # measured and out, never chosen or tied


# Replay before trust: the script end to end on a tiny store.

@pytest.mark.integration
def test_the_replay_over_a_tiny_store_saves_passes_and_never_stops_the_full_designs_choice(store, tmp_path):
    write = scenario.attempt_writer()
    for slot in rotated(list(DEMO_PASSES), 5):
        write(slot.variant, EPYC, DEMO_PASSES[slot.variant][slot.round - 1],
              **(REJECTED if slot.variant == "batch8-int8" else {}))
    catalog = hourly(tmp_path / "this-machine.csv")
    protocol = raced(tmp_path / "p.yaml")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "race_replay.py"), "--store", store,
                           "--experiment", scenario.EXPERIMENT, "--protocol", str(protocol), "--catalog", str(catalog),
                           "--orders", "4", "--seed", "1"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "race from round 2 of 5, 20 benchmark passes, 4 orders (seed 1)" in lines[0]
    saved = float(re.search(r"passes saved: ([\d.]+) %", done.stdout)[1])
    assert saved >= 100 * (4 + 3) / 20  # int8 runs 1 of 5, batch1 at most 2: at least 7 of 20 never run
    assert "the choice stopped: 0 of 4 orders (0.0 %; the full design decides batch8 on AMD EPYC)" in done.stdout
    assert "decision as the full design's: 4 of 4 orders" in done.stdout


@pytest.mark.unit
def test_the_replay_races_each_order_as_a_campaign_races_it(store, tmp_path):
    replay = load_benchmark("race_replay")
    write = scenario.attempt_writer()
    for slot in rotated(list(DEMO_PASSES), 5):
        write(slot.variant, EPYC, DEMO_PASSES[slot.variant][slot.round - 1],
              **(REJECTED if slot.variant == "batch8-int8" else {}))
    protocol = replay.raced_protocol(raced(tmp_path / "p.yaml", from_round=None), 2)
    found = replay.read_store(store, scenario.EXPERIMENT, protocol, [hourly(tmp_path / "this-machine.csv")])
    figures = replay.replay(found, orders=3, seed=0)
    assert (figures.orders, figures.recorded, figures.choice_stopped, figures.same_decision) == (3, 20, 0, 3)
    assert figures.full == {(EPYC, "batch8")}
    assert figures.stops["batch8-int8 on AMD EPYC"] == figures.stops["batch1 on AMD EPYC"] == 3
    assert set(figures.stops) <= {"batch8-int8 on AMD EPYC", "batch1 on AMD EPYC", "batch4 on AMD EPYC"}
    assert figures.ran <= 3 * (5 + 5 + 2 + 1)  # batch4 may stop too, where its order shows its cost early


# One real small campaign through `gpucost campaign`: the tiny model, a variant not comparable with the reference.

@pytest.mark.integration
def test_a_real_campaign_stops_a_rejected_variant_after_its_first_pass_and_a_resume_never_runs_it(
        store, tmp_path, corpus_dir, model_dir):
    protocol = raced(tmp_path / "protocol.yaml", write_protocol(tmp_path / "base.yaml"))
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 3"))
    variants = tmp_path / "variants.yaml"
    variants.write_text("defaults: {batch_size: 8, precision: fp32, quantization: none, compile: false, attention: "
                        "sdpa, padding: longest, max_length: 64, length_grouping: none, device: cpu}\nvariants:\n"
                        "  batch8: {}\n  batch8-short: {max_length: 32}\n")
    command = ["campaign", "--variants", "batch8-short,batch8", "--corpus", str(corpus_dir / "comparison.jsonl"),
               "--model", str(model_dir), "--variants-file", str(variants), "--protocol", str(protocol),
               "--experiment", "camp"]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    assert "stopped batch8-short after 1 pass: rejected for good: not comparable: max_length" in result.output
    table = attempts_table("camp")
    assert list(table["variant"]).count("batch8-short") == 1 and list(table["variant"]).count("batch8") == 3
    assert set(table[table["variant"] == "batch8-short"]["stopped"]) == {
        "rejected for good: not comparable: max_length"}
    campaign_id = table["campaign_id"][0]
    parent = MlflowClient().search_runs([MlflowClient().get_experiment_by_name("camp").experiment_id],
                                        filter_string=f"tags.`{schema.ROLE}` = 'campaign'")[0]
    assert parent.data.tags[schema.RACE_STOPPED].startswith("stopped batch8-short after 1 pass: rejected for good")

    again = CliRunner().invoke(main, [*command, "--resume", campaign_id])  # its two unrun slots are not run
    assert again.exit_code == 0, again.output
    assert len(attempts_table("camp")) == 4
