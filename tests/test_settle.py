"""The pre-registered second stage (`gpucost campaign --settle`, PROTOCOL.md §6): only the undecided configurations
run again, each the same number of passes, within the protocol's ceiling, and the decision is read once at the end."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.campaign.settle import second_stage
from gpucost_mlflow.core.errors import GpucostError

H = 3600.0
UNDECIDED_A = (14.813, 14.843, 14.863, 14.883, 14.903)  # hours: as tests/test_decision_rules.py's undecided pair
UNDECIDED_B = (14.833, 14.863, 14.893, 14.923, 15.163)


@pytest.mark.unit
def test_the_stage_asks_what_the_separation_test_needs_within_the_ceiling_the_same_for_each():
    stage = second_stage([("batch4", UNDECIDED_A), ("batch8", UNDECIDED_B)], 20, 0.95)
    assert (stage.variants, stage.needed, stage.target, stage.more) == (("batch4", "batch8"), 33, 20, 15)
    assert stage.line() == ("second stage: 15 more pass(es) each of batch4, batch8, to 20 per configuration (the "
                            "separation test's estimate 33, capped by the protocol's 20); the decision is read once, "
                            "when the stage has run")
    uneven = second_stage([("batch4", UNDECIDED_A + (14.9,)), ("batch8", UNDECIDED_B)], 8, 0.95)
    assert (uneven.target, uneven.more) == (8, 2)  # the same count for each, from the longer one's six


@pytest.mark.unit
@pytest.mark.parametrize("undecided, ceiling, says", [
    ([("batch4", UNDECIDED_A), ("batch8", UNDECIDED_B)], None, "the protocol declares no second stage"),
    ([("batch8", UNDECIDED_A), ("batch8", UNDECIDED_B)], 20, "share a variant name"),
])
def test_a_stage_the_protocol_did_not_declare_is_refused_in_one_line(undecided, ceiling, says):
    with pytest.raises(GpucostError, match=says):
        second_stage(undecided, ceiling, 0.95)


@pytest.mark.unit
@pytest.mark.parametrize("undecided, ceiling, says", [
    ([("batch4", (1.0, 1.1, 1.2)), ("batch8", (1.2, 1.1, 1.0))], 20, "no median difference between batch4, batch8"),
    ([("batch4", UNDECIDED_A * 2), ("batch8", UNDECIDED_B * 2)], 10, "already have 10 passes"),
])
def test_a_stage_more_passes_cannot_help_runs_nothing_and_says_why(undecided, ceiling, says):
    stage = second_stage(undecided, ceiling, 0.95)
    assert stage.more == 0 and says in stage.line() and stage.line().startswith("nothing to settle: ")


@pytest.mark.unit
def test_settle_on_an_undecided_store_runs_only_the_undecided_to_equal_counts_within_n_and_decides_once(
        experiment, tmp_path, monkeypatch):
    """The campaign of the stage is the ordinary one (tested with real passes elsewhere); here it stands in, writing
    the same two populations' next passes, so the test follows what the stage plans and how the decision is read."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.cli import main, passes
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.core.money.catalog import load_catalog
    from gpucost_mlflow.flow import campaign
    from gpucost_mlflow.report import card
    from gpucost_mlflow.tracking import experiments, schema
    from tests.helpers import CATALOG, VARIANTS, cli_runner
    from tests.scenario import B200, EXPERIMENT, RTX, lock_to, report
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="settle: {max_passes_per_variant: 8}\n")
    client = MlflowClient()
    experiment_id = lock_to(protocol)  # the scenario's experiment, locked to this protocol
    for a, b in zip(UNDECIDED_A, UNDECIDED_B):
        experiment("batch4", RTX, a * H)
        experiment("batch8", RTX, b * H)
        experiment("batch1", B200, a / 10 * H)  # ten times faster on a dearer lot: it separates, never run again
    before, _ = report(protocol_path=protocol)
    assert before.decision.startswith("No decision: undecided between batch4")
    settle_line = dict(card.lines(before))["Settle"]
    assert (f"`gpucost campaign --settle --experiment scenario --protocol {protocol} --catalog {CATALOG}` runs them, up "
            "to the protocol's 8 passes per configuration, and reads the decision once") in settle_line

    stages = []

    def stage_campaign(plan, display=None):
        stages.append((list(plan.variants), plan.passes, plan.stage, dict(plan.tags)))
        for round_ in range(plan.passes):
            experiment("batch4", RTX, (14.80 + round_ * 0.001) * H, tags_extra={schema.STAGE: "settle"})
            experiment("batch8", RTX, (15.20 + round_ * 0.001) * H, tags_extra={schema.STAGE: "settle"})
        return campaign.CampaignResult("csettle", "", experiment_id=experiment_id)

    monkeypatch.setattr(campaign, "run_campaign", stage_campaign)
    monkeypatch.setattr(passes, "_device_here", lambda: RTX)  # the stage runs on the machine it settles
    (tmp_path / "corpus.jsonl").write_text('{"id": "1", "text": "a", "label": "fresh"}\n')
    (tmp_path / "model").mkdir()
    result = cli_runner().invoke(main, ["campaign", "--settle", "--experiment", EXPERIMENT, "--protocol", str(protocol),
                                        "--variants-file", str(VARIANTS), "--catalog", str(CATALOG), "--corpus",
                                        str(tmp_path / "corpus.jsonl"), "--model", str(tmp_path / "model")])
    assert result.exit_code == 0, result.output
    assert [stage[:3] for stage in stages] == [(["batch4", "batch8"], 3, "settle")]  # 5 + 3 = the protocol's 8
    assert stages[0][3][schema.STAGE] == "settle"
    assert "second stage: 3 more pass(es) each of batch4, batch8, to 8 per configuration" in result.output
    decided = [line for line in result.output.splitlines() if line.startswith("decision after the second stage")]
    assert len(decided) == 1 and "(read once): Decision: batch4 on NVIDIA GeForce RTX 4090" in decided[0]

    built, _ = report(protocol_path=protocol)
    assert built.settle == ""  # decided: nothing to settle
    from types import SimpleNamespace

    from gpucost_mlflow.report.commands import settle_command

    at_ceiling = [SimpleNamespace(configuration=SimpleNamespace(durations=SimpleNamespace(values=(1.0,) * 8)))] * 2
    assert settle_command(EXPERIMENT, load_protocol(protocol), protocol, load_catalog(CATALOG), VARIANTS,
                          at_ceiling).startswith("the protocol's second stage has run them to its 8 passes per "
                                                 "configuration: more under this protocol would be peeking")
    (note,) = [w for w in built.warnings if w.startswith("a second stage pre-registered in the protocol")]
    assert "batch4 on NVIDIA GeForce RTX 4090 8, batch8 on NVIDIA GeForce RTX 4090 8" in note
    assert experiments.named(client, EXPERIMENT).id == experiment_id

    again = cli_runner().invoke(main, ["campaign", "--settle", "--experiment", EXPERIMENT, "--protocol", str(protocol),
                                       "--variants-file", str(VARIANTS), "--catalog", str(CATALOG), "--corpus",
                                       str(tmp_path / "corpus.jsonl"), "--model", str(tmp_path / "model")])
    assert again.exit_code == 0 and again.output.startswith("nothing to settle: Decision: batch4"), again.output
    assert len(stages) == 1


@pytest.mark.unit
def test_a_device_has_reported_when_its_share_is_counted_or_out_and_nothing_of_it_still_runs():
    from gpucost_mlflow.core.campaign.settle import DeviceShare, Progress, StagePlan, unreported

    plan = StagePlan(8, (DeviceShare("NVIDIA L4", ("batch8", "batch16"), 3), DeviceShare("NVIDIA A10G", ("batch8",), 3)))
    assert plan == StagePlan.from_record(plan.record())
    counted = {("NVIDIA L4", "batch8"): Progress(8), ("NVIDIA L4", "batch16"): Progress(8),
               ("NVIDIA A10G", "batch8"): Progress(8)}
    assert unreported(plan, counted) == []
    assert unreported(plan, {**counted, ("NVIDIA A10G", "batch8"): Progress(7)}) == ["NVIDIA A10G"]  # lost or running
    assert unreported(plan, {**counted, ("NVIDIA L4", "batch16"): Progress(8, running=True)}) == ["NVIDIA L4"]
    assert unreported(plan, {**counted, ("NVIDIA A10G", "batch8"): Progress(6, out=True)}) == []  # rejected: over
    assert unreported(plan, {k: v for k, v in counted.items() if k[0] != "NVIDIA A10G"}) == ["NVIDIA A10G"]


class _PastTheCheck(Exception):
    """Raised where a campaign that was not refused would lock the experiment and open its run."""


@pytest.mark.unit
def test_a_second_ordinary_campaign_over_the_same_variants_is_refused_with_the_settle_command(
        experiment, tmp_path, monkeypatch):
    """A finished campaign's passes of batch1 and batch8 on this machine: another ordinary campaign over batch8 would
    pool its passes with them, a second look the protocol did not pre-register. It is refused in one line naming the
    second stage's command, and nothing is recorded. New variants (the demo's third series), or the same variant on
    another device (a fleet's other GPU type), go on to open their campaign."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.cli import main
    from gpucost_mlflow.execution.devices import device_names
    from gpucost_mlflow.execution.models import resolve_device
    from gpucost_mlflow.flow import opening
    from gpucost_mlflow.tracking import schema
    from tests.helpers import SHIPPED_PROTOCOL, VARIANTS, cli_runner
    from tests.scenario import B200, EXPERIMENT

    client = MlflowClient()
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    here = ", ".join(device_names(resolve_device("auto")))  # where the shipped batch variants' passes run here
    for device, campaign_id, variants in ((here, "c1", ("batch1", "batch8")), (B200, "c2", ("batch4",))):
        parent = client.create_run(experiment_id, tags={schema.ROLE: schema.CAMPAIGN_ROLE,
                                                        schema.CAMPAIGN_ID: campaign_id})
        for _ in range(5):
            for variant in variants:
                experiment(variant, device, 10.0, tags_extra={schema.CAMPAIGN_ID: campaign_id})
        client.set_terminated(parent.info.run_id, "FINISHED")
    (tmp_path / "corpus.jsonl").write_text('{"id": "1", "text": "a", "label": "fresh"}\n')
    (tmp_path / "model").mkdir()

    def ordinary(variants: str):
        return cli_runner().invoke(main, ["campaign", "--variants", variants, "--experiment", EXPERIMENT,
                                          "--protocol", str(SHIPPED_PROTOCOL), "--variants-file", str(VARIANTS),
                                          "--corpus", str(tmp_path / "corpus.jsonl"),
                                          "--model", str(tmp_path / "model")])

    def recorded():
        runs = client.search_runs([experiment_id], max_results=1000)
        return len(runs), dict(client.get_experiment(experiment_id).tags)

    before = recorded()
    refused = ordinary("batch4,batch8")
    assert refused.exit_code == 2, refused.output
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith(f"Error: batch8 on {here} already has the benchmark passes of finished campaign "
                           f"c1 in experiment '{EXPERIMENT}': another campaign would pool its passes with theirs"), line
    assert (f"`gpucost campaign --settle --experiment {EXPERIMENT} --protocol {SHIPPED_PROTOCOL} --variants-file "
            f"{VARIANTS} --catalog CATALOG`") in line and line.endswith("nothing recorded")
    assert recorded() == before  # no campaign run, no pass, no lock

    def reached(*args):
        raise _PastTheCheck

    monkeypatch.setattr(opening, "_lock", reached)
    for variants in ("batch4", "batch8-bf16,batch8-lengthgrouped"):  # batch4 ran on the B200 only; the others never
        assert isinstance(ordinary(variants).exception, _PastTheCheck)


@pytest.mark.unit
def test_two_looks_keep_the_declared_error_rate(experiment, tmp_path):
    """Under no difference, the first look (5 + 5 passes) and the second stage's (8 + 8) each read at 95 % find a
    difference in about 6 % of experiments, above the declared 5 %; each at 97.5 % (Bonferroni: alpha / 2 each), in
    about 3 %. A protocol that declares `settle` reads both looks so, and says it; one whose stage has run does too."""
    import numpy as np

    from gpucost_mlflow.core.campaign.settle import DeviceShare, StagePlan, looks
    from gpucost_mlflow.core.measurement.stats import per_look, shift_interval
    from gpucost_mlflow.tracking import schema
    from tests.scenario import RTX, report
    from tests.test_report import protocol_like_shipped

    assert (looks(None), looks(8), looks(None, staged=True), per_look(0.95, 2), per_look(0.95, 1)) == (1, 2, 2, 0.975, 0.95)
    rng = np.random.default_rng(0)
    samples = [(rng.normal(size=8), rng.normal(size=8)) for _ in range(4000)]

    def error_rate(confidence: float) -> float:
        def found(iv):
            return iv is not None and (iv[0] > 0 or iv[1] < 0)
        return sum(found(shift_interval(a[:5], b[:5], confidence)) or found(shift_interval(a, b, confidence))
                   for a, b in samples) / len(samples)

    assert error_rate(0.95) > 0.05 >= error_rate(per_look(0.95, looks(8)))

    # Two pairs of 25 go the other way: separated at 95 % (the 3rd to 23rd differences), not at 97.5 % (2nd to 24th).
    runs = [experiment("batch4", RTX, s) for s in (10.0, 11.0, 12.0, 13.0, 16.0)]
    runs += [experiment("batch8", RTX, s) for s in (14.0, 15.0, 17.0, 18.0, 19.0)]

    def verdict(built) -> str:
        (found,) = [s for label, s in built.separations if {s.faster, s.slower} == {"batch4", "batch8"}]
        return found.verdict

    alone, _ = report()
    assert verdict(alone).startswith("batch4 faster than batch8 by 5.000 s (median); the 95 % interval of the "
                                     "difference, 1.000 to 8.000 s, excludes zero")
    declared, _ = report(protocol_path=protocol_like_shipped(tmp_path, append="settle: {max_passes_per_variant: 8}\n"))
    assert verdict(declared).startswith("undecided: the 97.5 % interval (95 % over two looks) of the difference, "
                                        "-1.000 to 8.000 s, includes zero")
    assert all(a.rules.confidence == 0.975 and a.rules.looks == 2 for a in declared.assessments)
    from mlflow.tracking import MlflowClient

    MlflowClient().set_tag(runs[-1], schema.SETTLE_PLAN, StagePlan(5, (DeviceShare(RTX, ("batch8",), 0),)).tag())
    staged, _ = report()  # a stage has run: its looks count, whatever the protocol read now declares
    assert verdict(staged).startswith("undecided: the 97.5 % interval (95 % over two looks)")
