"""The MLflow UI as a surface (issue 16): run names, descriptions, sortable metrics, short tags, the preview, the link."""

from __future__ import annotations

import itertools
import json
from decimal import Decimal

import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core import names
from gpucost_mlflow.core.judging.preview import preview
from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.choice import Choice, choose
from gpucost_mlflow.core.money.decision import Assessment, Configuration
from gpucost_mlflow.report import decided, decision_text, short
from gpucost_mlflow.tracking import (
    decision_run,
    descriptions,
    exclusions,
    experiments,
    limits,
    schema,
    ui,
    writer,
)
from gpucost_mlflow.tracking.ui import link_line, runs_url
from tests.helpers import CATALOG, SHIPPED_PROTOCOL, VARIANTS, write_protocol

PEAK_REASON = ("no dense-matmul peak cached for 'cpu|fp32|Some CPU' in /home/someone/.cache/gpucost/a/long/path/"
               "peak.json (run `gpucost doctor --peak`)")


def _slot_tags(variant: str, campaign: str, index: int, round_: int, position: int, attempt: int = 1) -> dict:
    return writer.start_tags(role="benchmark", variant=variant, basis=writer.Basis("cpu", "cpu", "f", "p"),
                             campaign_id=campaign, pass_index=str(index),
                             extra={schema.ROUND: round_, schema.POSITION: position, schema.ATTEMPT: attempt})


@pytest.mark.unit
def test_pass_runs_are_named_by_variant_round_position_index_and_campaign():
    assert descriptions.pass_name(_slot_tags("batch8", "c3f2a19b0d", 9, 2, 3), "0" * 32) == "batch8 · r2p3 · #9 · c3f2a1"
    retry = descriptions.pass_name(_slot_tags("batch8", "c3f2a19b0d", 9, 2, 3, attempt=2), "1" * 32)
    assert retry == "batch8 · r2p3 · #9 try 2 · c3f2a1"
    other_campaign = descriptions.pass_name(_slot_tags("batch8", "c99aa00bb1", 9, 2, 3), "2" * 32)
    assert len({retry, other_campaign, "batch8 · r2p3 · #9 · c3f2a1"}) == 3


@pytest.mark.unit
def test_a_pass_outside_any_campaign_is_named_by_its_run_id():
    tags = writer.start_tags(role="benchmark", variant="batch8", basis=writer.Basis("cpu", "cpu", "f", "p"))
    assert descriptions.pass_name(tags, "a1b2c3d4e5") == "batch8 · pass a1b2c3"
    tags[schema.ROLE] = "deliverable"
    assert descriptions.pass_name(tags, "ffee00") == "batch8 · deliverable ffee00"


@pytest.mark.unit
def test_the_references_outputs_run_is_named_and_described_as_the_reference_not_as_a_confirmation():
    tags = writer.start_tags(role="confirmation", variant="batch8", basis=writer.Basis("cpu", "cpu", "f", "p"),
                             extra={schema.CONFIRMATION: schema.REFERENCE_OUTPUTS})
    assert descriptions.pass_name(tags, "197528aa") == "batch8 · reference outputs for confirmation 197528"
    where = descriptions.pass_note({**tags, schema.STATUS: "accepted"}, {})
    assert "the reference's outputs on the confirmation corpus" in where and "never counted" in where
    confirming = {**tags, schema.CONFIRMATION: "confirmed", schema.STATUS: "accepted"}
    note = descriptions.pass_note(confirming, {"steady_lap_s": 3.5477, "pass_s": 3.4248, "first_lap_s": 3.1983,
                                               "repetitions": 9.0})
    assert "outside any campaign" not in note and "verdict in the latest decision: **confirmed**" in note
    assert "| steady lap |" in note and "first lap 3.198 s" in note  # one duration named, the others for what they are


def _assessment(variant: str, committed: str | None) -> Assessment:
    config = Configuration("NVIDIA B200", variant, ["accepted"] * 2, Durations((10.0, 10.2)), {})
    item = Assessment(config, True, "2 of 2 attempts accepted", deadline_status="met")

    class Plan:
        total, currency = (Decimal(committed), "USD") if committed else (None, "")

    if committed:
        item.plans = [Plan()]
    return item


@pytest.mark.unit
def test_the_decision_run_is_named_for_the_chosen_configuration_or_the_reason_there_is_none():
    chosen = Choice([_assessment("batch8", "110.00")])
    assert decision_text.decision_name(chosen, example_prices=False) == "batch8 · chosen"
    assert decision_text.decision_name(chosen, example_prices=True) == "batch8 · chosen · what-if"
    assert decision_text.decision_name(chosen, True, what_if_protocol=True) == "batch8 · chosen · what-if protocol"
    tied = Choice([_assessment("batch4", "110.00"), _assessment("batch8", "110.00")])
    assert decision_text.decision_name(tied, False) == "batch4 +1 · tied"
    assert decision_text.decision_name(choose([]), False) == "no benchmark pass in this experiment · no decision"
    unpriced = _assessment("batch8", None)
    unpriced.priced = "not priced: NVIDIA B200 has no package"
    assert decision_text.decision_name(choose([unpriced]), False) == "nothing priced · no decision"


@pytest.mark.unit
def test_a_decision_run_name_fits_sixty_characters_with_the_reports_short_names():
    variants = ["batch64-bf16-lengthgrouped", "batch8-lengthgrouped", "batch8-bf16", "batch4", "batch1", "batch8"]
    tie = Choice([_assessment(v, "0.50") for v in variants])
    named = short.names([a.configuration for a in tie.chosen]).of
    assert decision_text.decision_name(tie, True, named=named) == "batch64-bf16-lg +5 · tied · what-if"
    long = Choice([_assessment("batch64-bf16-lengthgrouped-compiled-" + "x" * 60, "1.00")] * 6)
    for name in (decision_text.decision_name(long, True, True), decision_text.decision_name(tie, True, True)):
        assert len(name) <= decision_text.DECISION_NAME and name.endswith(" · what-if protocol")
    assert decision_text.decision_name(long, False).endswith(" +5 · tied")
    assert len(decision_text.decision_name(choose([]), True, True)) <= decision_text.DECISION_NAME


@pytest.mark.unit
def test_a_missing_measurement_is_a_short_tag_that_keeps_what_to_run():
    tags = descriptions.missing_tags({"mfu_useful": PEAK_REASON})
    value = tags[f"{schema.MISSING_PREFIX}mfu_useful"]
    assert len(value) <= descriptions.SHORT and value.startswith("no dense-matmul peak cached")
    assert value.endswith("(run `gpucost doctor --peak`)")


@pytest.mark.unit
def test_every_pass_gets_accepted_and_throughputs_and_its_missing_reasons():
    metrics, tags = writer.outcome_batch(status="rejected", reason="quality: below the bar",
                                         metrics={"pass_s": 2.0, "completed_entries": 30, "tokens_real": 900.0},
                                         quality_verdict="failed: quality",
                                         missing={"mfu_useful": PEAK_REASON})
    values = {m.key: m.value for m in metrics}
    assert values[schema.ACCEPTED] == 0.0 and values[schema.INPUTS_PER_S] == 15.0 and values[schema.TOKENS_PER_S] == 450.0
    assert {t.key for t in tags} >= {f"{schema.MISSING_PREFIX}mfu_useful"}
    failed, _ = writer.outcome_batch(status="failed", reason="out of memory", metrics={},
                                     quality_verdict="")
    assert {m.key: m.value for m in failed} == {schema.ACCEPTED: 0.0}  # no throughput without a measured pass


@pytest.mark.unit
def test_the_pass_description_says_status_timing_main_metric_failed_checks_and_missing_measurements():
    tags = {**_slot_tags("batch1", "c3f2a19b0d", 2, 1, 2), schema.MAIN_METRIC: "macro_f1", schema.STATUS: "rejected",
            schema.STATUS_REASON: "quality: macro_f1 0.21 below 0.5", f"{schema.CHECK_PREFIX}quality": "fail: macro_f1 0.21 below 0.5",
            f"{schema.CHECK_PREFIX}ids": "pass: exact", f"{schema.MISSING_PREFIX}mfu_useful": "no peak cached"}
    note = descriptions.pass_note(tags, {"pass_s": 1.5, "macro_f1": 0.21, schema.ACCEPTED: 0.0})
    assert note.startswith("### batch1 · rejected")
    assert "| 1.500 s | 0.2100 | 0 |" in note
    assert "**Failed checks:** quality: macro_f1 0.21 below 0.5" in note and "ids" not in note.split("Failed checks")[1].split("\n")[0]
    assert "**Missing measurements:** mfu_useful: no peak cached" in note
    assert "campaign `c3f2a19b0d`, round 1, position 2, pass 2" in note


@pytest.mark.unit
def test_the_predictions_preview_lists_failed_predictions_first_then_a_sample():
    rows = [{"id": f"r{i}", "text": "word " * 100, "label": "fresh", "bucket": "short"} for i in range(60)]
    predicted = {f"r{i}": ("rotten" if i in (7, 40) else "fresh") for i in range(60) if i != 3}
    predicted["stranger"] = "plot"
    table = preview(rows, predicted, gold_labels=True, sample_rows=5)
    assert table["columns"] == ["id", "outcome", "gold", "predicted", "bucket", "text"]
    outcomes = [(row[0], row[1]) for row in table["data"]]
    assert outcomes[:4] == [("r3", "missing"), ("r7", "wrong"), ("r40", "wrong"), ("stranger", "unexpected id")]
    assert [o for _, o in outcomes[4:]] == ["right"] * 5
    assert all(len(row[5]) <= 160 for row in table["data"])
    unlabelled = preview(rows[:3], {"r0": "plot", "r1": "plot", "r2": "plot"}, gold_labels=False)
    assert [row[1] for row in unlabelled["data"]] == ["no gold label"] * 3


@pytest.mark.unit
def test_a_generation_preview_adds_what_the_model_wrote_to_each_row():
    rows = [{"id": f"r{i}", "text": f"review {i}", "label": "fresh", "bucket": "short"} for i in range(4)]
    written = {"r0": "fresh", "r1": "Rotten, I think.", "r2": "fresh " * 80}
    table = preview(rows, {"r0": "fresh", "r1": "rotten", "r2": "fresh"}, outputs=written)
    assert table["columns"] == ["id", "outcome", "gold", "predicted", "bucket", "text", "output"]
    assert [(row[0], row[1], row[-1]) for row in table["data"][:2]] == [("r1", "wrong", "Rotten, I think."),
                                                                           ("r3", "missing", "")]
    assert all(len(row[-1]) <= 160 for row in table["data"])
    free_text = preview(rows, dict.fromkeys(written, ""), gold_labels=False, outputs=written)
    assert [row[1] for row in free_text["data"]] == ["missing", "no gold label", "no gold label", "no gold label"]


@pytest.mark.unit
def test_the_ui_link_opens_the_passes_view_on_the_server_or_after_mlflow_ui():
    route = f"#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey={ui.PASSES_VIEW}"
    assert runs_url("https://alice:secret@mlflow.example.com/", "7") == f"https://mlflow.example.com/{route}"
    assert link_line("http://127.0.0.1:5005", "7") == f"MLflow UI: http://127.0.0.1:5005/{route}"
    local = link_line("sqlite:////data/my store/mlflow.db", "7")
    assert local == ("MLflow UI: run `mlflow ui --backend-store-uri 'sqlite:////data/my store/mlflow.db'`, then open "
                     f"http://127.0.0.1:5000/{route}")
    plain = link_line("http://127.0.0.1:5005", "7", view=False)
    assert plain == "MLflow UI: http://127.0.0.1:5005/#/experiments/7/runs?workflowType=machine_learning"


@pytest.mark.unit
def test_the_passes_view_sorts_by_the_steady_lap_and_shows_status_standing_and_throughput():
    key, value = ui.passes_view(1_700_000_000_000)
    assert key == f"mlflow.sharedViewState.{ui.PASSES_VIEW}" and len(value) <= limits.EXPERIMENT_TAG_VALUE
    envelope = json.loads(value)
    assert envelope["name"] == ui.PASSES_VIEW_NAME and envelope["createdAt"] == 1_700_000_000_000
    state = json.loads(envelope["state"])
    assert (state["orderByKey"], state["orderByAsc"]) == ("metrics.`steady_lap_s`", True)  # the decision's duration
    assert envelope["name"] == "gpucost: passes by steady lap"
    # benchmark passes only: no confirmation, deliverable, campaign or decision run (each role has its own view)
    assert state["searchFilter"] == "tags.`gpucost.variant` LIKE '%' AND params.`gpucost.role` = 'benchmark'"
    assert state["selectedColumns"] == ["tags.`gpucost.standing`", "metrics.`committed_usd`",
                                        "tags.`gpucost.variant`", "tags.`gpucost.status`", "metrics.`accepted`",
                                        "metrics.`steady_lap_s`", "metrics.`inputs_per_s`"]  # standing and cost first
    views = ui.views(1_700_000_000_000)
    roles = {key: json.loads(json.loads(value)["state"])["searchFilter"].rsplit("= ", 1)[1] for key, value in views.items()}
    assert sorted(roles.values()) == ["'benchmark'", "'confirmation'", "'deliverable'"]
    euro = json.loads(json.loads(ui.passes_view(1, currency="eur")[1])["state"])
    assert "metrics.`committed_eur`" in euro["selectedColumns"]
    tags = dict(views)
    assert ui.outdated(tags, "USD") == [] and ui.outdated(tags, "EUR") == [ui.PASSES_VIEW]  # the one priced


@pytest.mark.unit
def test_the_confirmation_view_has_its_own_columns_verdict_rate_repetitions_agreement_and_flips():
    state = json.loads(json.loads(ui.passes_view(1, ui.CONFIRMATIONS_VIEW)[1])["state"])
    assert state["searchFilter"].endswith("params.`gpucost.role` = 'confirmation'")
    assert state["selectedColumns"][:6] == [
        f"tags.`{schema.CONFIRMATION}`", f"metrics.`{names.RATE_VS_SLOWEST}`", "metrics.`repetitions`",
        "metrics.`label_agreement`", "metrics.`flips_lost`", "metrics.`flips_gained`"]
    assert not any("standing" in column or "committed" in column for column in state["selectedColumns"])
    assert state["orderByKey"] == "metrics.`steady_lap_s`"
    delivered = json.loads(json.loads(ui.passes_view(1, ui.DELIVERABLES_VIEW)[1])["state"])
    assert delivered["orderByKey"] == "metrics.`pass_s`"  # a deliverable is delivered in one lap


@pytest.mark.unit
def test_campaign_medians_count_completed_passes_that_are_not_excluded():
    attempts = [{"variant": "batch1", "status": "accepted", "pass_s": 3.0},
                {"variant": "batch8", "status": "accepted", "pass_s": 5.0},
                {"variant": "batch1", "status": "excluded", "pass_s": 30.0},
                {"variant": "batch8", "status": "failed"}]
    metrics = descriptions.campaign_progress(attempts)
    assert metrics == {schema.PASSES_FINISHED: 4.0, schema.PASSES_ACCEPTED: 2.0,
                       f"{schema.MEDIAN_STEADY_LAP_PREFIX}batch1": 3.0, f"{schema.MEDIAN_STEADY_LAP_PREFIX}batch8": 5.0}
    note = descriptions.campaign_note("c1", ["batch1", "batch8", "batch4"], 2, attempts, "running")
    assert note.startswith("### campaign c1 · running, 4 of 6 passes finished")
    assert "| batch1 | 2 of 2 | 1 accepted, 1 excluded | 3.000 s |" in note
    assert "| batch8 | 2 of 2 | 1 accepted, 1 failed | 5.000 s |" in note
    assert "| batch4 | 0 of 2 | none yet | (empty) |" in note


@pytest.mark.unit
def test_excluding_a_pass_sets_accepted_to_0_and_says_so_in_its_description_undo_restores(store):
    from gpucost_mlflow.core.inputs.protocol import load_protocol

    client = MlflowClient()
    protocol = load_protocol(SHIPPED_PROTOCOL)
    experiment_id = experiments.resolve(client, "ui", create=True).id
    experiments.lock(client, experiment_id, "ui", protocol, (SHIPPED_PROTOCOL).read_text())
    assert "Quality bar:** macro_f1 at least 0.8" in client.get_experiment(experiment_id).tags[schema.NOTE]
    tags = writer.start_tags(role="benchmark", variant="batch8", basis=writer.Basis("cpu", "cpu", "f", protocol.digest))
    run_id = client.create_run(experiment_id, tags=tags).info.run_id
    writer.log_outcome(client, run_id, status="accepted", reason="every check passed",
                       metrics={"pass_s": 1.0, "completed_entries": 30}, quality_verdict="passed")
    assert client.get_run(run_id).data.metrics[schema.ACCEPTED] == 1.0
    exclusions.exclude(client, run_id, "operator", "another job ran on the host", who="tester")
    run = client.get_run(run_id)
    assert run.data.metrics[schema.ACCEPTED] == 0.0
    assert "**Excluded** by tester" in run.data.tags[schema.NOTE] and "another job ran" in run.data.tags[schema.NOTE]
    exclusions.undo(client, run_id, who="tester")
    run = client.get_run(run_id)
    assert run.data.metrics[schema.ACCEPTED] == 1.0
    assert run.data.tags[schema.NOTE].startswith("### batch8 · accepted") and "**Exclusion undone:**" in run.data.tags[schema.NOTE]


def _runs(client: MlflowClient, experiment_id: str, role: str):
    kind = "tags" if role in (schema.CAMPAIGN_ROLE, schema.DECISION_ROLE) else "params"  # a pass's role is a fact
    return client.search_runs([experiment_id], filter_string=f"{kind}.`{schema.ROLE}` = '{role}'", max_results=100)


@pytest.mark.integration
def test_after_a_campaign_and_its_report_every_run_has_a_unique_name_and_a_description(store, tmp_path, corpus_dir,
                                                                                         model_dir):
    protocol = write_protocol(tmp_path / "protocol.yaml")
    # Two passes of a 30-input slice on a CPU the other tests load: a pass may take 0.25 s or 9 s. The spread bar is
    # lifted so the what-if decision is decided whatever the load (this test is about names and descriptions).
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 2")
                        .replace("max_spread_ratio: 10", "max_spread_ratio: 1000")
                        + "plan: {start: '2026-11-30T09:00:00+01:00', setup_hours: 0.5, waiting_hours: 0.25, "
                          "planned_restarts: 1}\n")
    common = ["--variants-file", str(VARIANTS), "--protocol", str(protocol), "--experiment", "ui"]
    ran = CliRunner().invoke(main, ["campaign", "--variants", "batch1,batch8", "--passes", "2", "--corpus",
                                    str(corpus_dir / "comparison.jsonl"), "--model", str(model_dir), *common])
    assert ran.exit_code == 0, ran.output
    client = MlflowClient()
    experiment = client.get_experiment_by_name("ui")
    route = f"/{ui.runs_path(experiment.experiment_id)}"
    assert f"then open http://127.0.0.1:5000{route}" in ran.output
    assert experiment.tags[schema.EXPERIMENT_KIND] == schema.MODEL_DEVELOPMENT
    assert f"{schema.SAVED_VIEW_PREFIX}{ui.PASSES_VIEW}" in experiment.tags

    reported = CliRunner().invoke(main, ["report", "--out", str(tmp_path / "r1"), *common])
    assert reported.exit_code == 0, reported.output
    assert route in reported.output
    catalog = tmp_path / "this-machine.csv"
    assert CliRunner().invoke(main, ["catalog", "example", "--out", str(catalog), "--device", "cpu"]).exit_code == 0
    priced = CliRunner().invoke(main, ["report", "--out", str(tmp_path / "r2"), "--catalog", str(catalog), *common])
    assert priced.exit_code == 0, priced.output

    passes = _runs(client, experiment.experiment_id, "benchmark")
    assert len(passes) == 4
    names = [run.info.run_name for run in passes]
    assert len(set(names)) == 4 and all(" · r" in name for name in names)
    for run in passes:
        assert run.data.tags[schema.NOTE].startswith(f"### {run.data.tags[schema.VARIANT]} · ")
        assert run.data.metrics[schema.ACCEPTED] in (0.0, 1.0)
        assert schema.INPUTS_PER_S in run.data.metrics
        table = json.loads(run.data.tags[schema.LOGGED_ARTIFACTS])
        assert table == [{"path": schema.PREVIEW, "type": "table"}]
        assert schema.PREVIEW in [item.path for item in client.list_artifacts(run.info.run_id)]

    (campaign,) = _runs(client, experiment.experiment_id, schema.CAMPAIGN_ROLE)
    campaign_id = campaign.data.tags[schema.CAMPAIGN_ID]
    assert campaign.info.run_name == f"campaign {campaign_id}: batch1, batch8"
    assert campaign.data.tags[schema.NOTE].startswith(f"### campaign {campaign_id} · finished, 4 of 4 passes finished")
    medians = {f"{schema.MEDIAN_STEADY_LAP_PREFIX}batch1", f"{schema.MEDIAN_STEADY_LAP_PREFIX}batch8"}
    assert medians <= set(campaign.data.metrics)
    assert campaign.data.metrics[schema.PASSES_FINISHED] == 4.0
    for key in [*medians, schema.PASSES_FINISHED]:  # logged once at the finish, not a running series
        assert len(client.get_metric_history(campaign.info.run_id, key)) == 1, key

    assert experiment.tags[schema.NOTE].startswith("Which configuration classifies the test slice")  # words, not Markdown
    none, decided = sorted(_runs(client, experiment.experiment_id, schema.DECISION_ROLE), key=lambda r: r.info.start_time)
    assert none.info.run_name == "nothing priced · no decision"
    assert none.data.tags[schema.DECISION] == "none"
    # The newer decision is a what-if (an example price): it stands beside the provider catalog's, never replaces it.
    assert schema.SUPERSEDED_BY not in none.data.tags
    assert not none.data.tags[schema.NOTE].startswith(descriptions.SUPERSEDED)
    assert "### Decision: none" in none.data.tags[schema.NOTE]
    assert none.data.tags[schema.DECISION_CAMPAIGNS] == campaign_id and campaign.info.run_id in none.data.tags[schema.NOTE]
    assert decided.data.tags[schema.DECISION] == "decided", decided.data.tags[schema.NOTE]
    assert schema.SUPERSEDED_BY not in decided.data.tags
    name = decided.info.run_name
    assert (" · tied" in name or " · chosen" in name) and name.endswith(" · what-if")
    assert len(name) <= decision_text.DECISION_NAME
    chosen = decided.data.tags[schema.DECISION_VARIANT].split(" or ")  # two configurations at one cost may tie
    assert set(chosen) <= {"batch1", "batch8"} and chosen[0] in name
    currency = decided.data.tags[schema.DECISION_CURRENCY].lower()
    metrics = decided.data.metrics
    assert metrics[f"committed_cost_{currency}"] > 0 and metrics["forecast_h"] >= 0.75
    assert metrics["forecast_h"] == float(f"{metrics['forecast_h']:.3g}")  # rounded as the UI shows it
    assert decided.data.params["deadline"].startswith("2026-12-04")
    standings = {client.get_run(run.info.run_id).data.tags[schema.STANDING] for run in passes}
    assert all(word.endswith(" · what-if") for word in standings), standings  # decided with example prices
    assert any(word.startswith(("chosen", "tied")) for word in standings), standings


@pytest.mark.unit
def test_two_first_passes_describing_the_experiment_at_once_keep_one_description(monkeypatch):
    """The second writer of the experiment's note meets the store's unique key (PostgreSQL): the note stands, no error."""
    from types import SimpleNamespace

    from mlflow.exceptions import MlflowException

    from gpucost_mlflow.core.inputs.protocol import load_protocol

    monkeypatch.setattr(experiments.time, "sleep", lambda seconds: None)
    written = {schema.NOTE: "written by the other pass"}

    class Racing:
        def set_experiment_tag(self, experiment_id, key, value):
            raise MlflowException("duplicate key value violates unique constraint")

        def get_experiment(self, experiment_id):
            return SimpleNamespace(tags=written)

    experiments._describe(Racing(), "1", {}, load_protocol(SHIPPED_PROTOCOL))
    written.clear()
    with pytest.raises(MlflowException):
        experiments._describe(Racing(), "1", {}, load_protocol(SHIPPED_PROTOCOL))


# The MLflow UI as a decision surface (issue 30, item 4).

@pytest.mark.unit
def test_an_experiment_gpucost_creates_or_locks_is_a_model_development_experiment_with_the_passes_view(store):
    from gpucost_mlflow.core.inputs.protocol import load_protocol

    client = MlflowClient()
    view = f"{schema.SAVED_VIEW_PREFIX}{ui.PASSES_VIEW}"
    created = experiments.resolve(client, "new", create=True).id
    assert client.get_experiment(created).tags[schema.EXPERIMENT_KIND] == schema.MODEL_DEVELOPMENT
    assert view in client.get_experiment(created).tags
    older = client.create_experiment("older")  # made before gpucost tagged experiments, or by `mlflow run`
    chosen = client.create_experiment("chosen", tags={schema.EXPERIMENT_KIND: "genai_development"})
    for experiment_id, name in ((older, "older"), (chosen, "chosen")):
        experiments.lock(client, experiment_id, name, load_protocol(SHIPPED_PROTOCOL), SHIPPED_PROTOCOL.read_text())
    assert client.get_experiment(older).tags[schema.EXPERIMENT_KIND] == schema.MODEL_DEVELOPMENT
    assert client.get_experiment(chosen).tags[schema.EXPERIMENT_KIND] == "genai_development"  # a kind set stands
    assert view in client.get_experiment(older).tags and view in client.get_experiment(chosen).tags
    plain = client.create_experiment("plain")
    assert experiments.presented(client, plain) and view in client.get_experiment(plain).tags


@pytest.mark.unit
def test_the_printed_link_opens_the_plain_runs_table_when_the_store_refuses_the_view(monkeypatch):
    from mlflow.exceptions import MlflowException

    class ReadOnly:
        def get_experiment(self, experiment_id):
            raise MlflowException("Permission denied", error_code="PERMISSION_DENIED")

    assert experiments.presented(ReadOnly(), "3") is False


def _figures_of(**given):
    from types import SimpleNamespace

    figures = {"currency": "USD", "committed": Decimal("110.00"), "saving": None,
               "cost_per_million_inputs": Decimal("0.0012345"), "cost_per_million_output_tokens": None,
               "forecast_hours": 4.139373147779167, "forecast": SimpleNamespace(high_hours=1234.56789),
               "spare": SimpleNamespace(spare=12)}
    return decided.figures(SimpleNamespace(**{**figures, **given}))


@pytest.mark.unit
def test_decision_metrics_carry_their_unit_and_are_rounded_as_the_ui_shows_them():
    assert _figures_of() == {"committed_cost_usd": 110.0, "forecast_cost_per_million_planned_inputs_usd": 0.001235,
                             "forecast_h": 4.14,
                             "forecast_slowest_h": 1234.57, "spare_deliverables": 12.0}
    euros = _figures_of(currency="EUR", saving=Decimal("12.5"), cost_per_million_output_tokens=Decimal("123.456"))
    assert euros["possible_saving_eur"] == 12.5
    assert euros["forecast_cost_per_million_planned_output_tokens_eur"] == 123.46
    assert "forecast_cost_per_million_planned_output_tokens_usd" not in _figures_of()  # a figure it lacks is absent, never 0


def _decision(client: MlflowClient, experiment_id: str, name: str, note: str, standings=None) -> str:
    tags = {schema.NOTE: note, schema.DECISION: schema.DECIDED, schema.DECISION_CURRENCY: "USD"}
    return decision_run.log_decision(client, experiment_id, decision_run.Decided(
        name, "d" * 64, tags, metrics={"committed_cost_usd": 110.0}, standings=standings or {}))


@pytest.mark.unit
def test_a_new_decision_run_marks_the_older_ones_superseded_and_keeps_their_bill_history(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("decisions")
    first = _decision(client, experiment_id, "decision: batch1", "### Decision: batch1\n\nDecision: batch1.")
    client.set_tag(first, schema.NOTE, decision_run.billed_note("### Decision: batch1\n\nDecision: batch1.",
                                                                ["- 2026-12-01T10:00Z: 118.40 USD; invoice 1"]))
    second = _decision(client, experiment_id, "decision: batch8", "### Decision: batch8")
    third = _decision(client, experiment_id, "decision (tie of 2): batch8 +1", "### Decision (tied): batch8 or batch4")
    old, middle, newest = (client.get_run(run_id).data.tags for run_id in (first, second, third))
    assert old[schema.SUPERSEDED_BY] == second and middle[schema.SUPERSEDED_BY] == third  # superseded once, by the next
    assert schema.SUPERSEDED_BY not in newest and newest[schema.NOTE] == "### Decision (tied): batch8 or batch4"
    assert old[schema.NOTE].startswith(f"{descriptions.SUPERSEDED} at ") and "(`decision: batch1`)" not in old[schema.NOTE]
    assert "(`decision: batch8`): this decision is kept for the record" in old[schema.NOTE]
    assert ui.run_path(experiment_id, second) in old[schema.NOTE]
    assert old[schema.NOTE].endswith("### Bill history\n\n" + decision_run.BILL_HISTORY_SAYS
                                     + "\n\n- 2026-12-01T10:00Z: 118.40 USD; invoice 1")
    assert decision_run.latest_decision(client, experiment_id).info.run_id == third


@pytest.mark.unit
def test_a_what_if_decision_never_supersedes_a_decision_on_a_provider_catalog(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("what-if")
    provider = _decision(client, experiment_id, "nothing priced · no decision", "### Decision: none")
    what_if = decision_run.log_decision(client, experiment_id, decision_run.Decided(
        "batch16-bf16-lg +2 · tied · confirmed 1 of 3 · what-if", "d" * 64,
        {schema.NOTE: "### Decision (tied)", schema.DECISION: schema.DECIDED, schema.DECISION_WHAT_IF: "example prices"}))
    again = _decision(client, experiment_id, "batch8 · what-if", "### Decision: batch8")  # an older run's name says it
    assert schema.SUPERSEDED_BY not in client.get_run(provider).data.tags  # the provider catalog's decision stands
    assert client.get_run(what_if).data.tags[schema.SUPERSEDED_BY] == again  # a what-if supersedes an older what-if
    # A bill or a delivery acts on the provider's plan, never on a newer what-if's.
    assert decision_run.latest_decision(client, experiment_id).info.run_id == provider
    newest = _decision(client, experiment_id, "batch8 · chosen", "### Decision: batch8")
    assert client.get_run(provider).data.tags[schema.SUPERSEDED_BY] == newest
    decision_run.log_decision(client, experiment_id, decision_run.Decided(
        "batch8 · what-if", "e" * 64, {schema.NOTE: "### Decision: batch8", schema.DECISION: schema.DECIDED,
                                       schema.DECISION_WHAT_IF: "example prices"}))
    assert decision_run.latest_decision(client, experiment_id).info.run_id == newest  # never a newer what-if


@pytest.mark.unit
def test_a_decision_run_logged_before_the_unit_was_named_still_gives_its_committed_cost(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("legacy")
    run_id = decision_run.log_decision(client, experiment_id, decision_run.Decided(
        "decision: batch8", "d" * 64, {schema.DECISION: schema.DECIDED, schema.DECISION_CURRENCY: "USD",
                                       schema.BILL_PAID: "118.40"}, metrics={schema.COMMITTED_COST: 110.0}))
    assert decision_run.bill_of(client.get_run(run_id)).committed == Decimal("110.00")


@pytest.mark.unit
def test_each_pass_shows_its_configurations_standing_in_the_latest_decision(experiment, tmp_path):
    from gpucost_mlflow.report import standing as standing_words
    from tests.scenario import B200

    fast = [experiment("batch8", B200, seconds) for seconds in (10.0, 10.1, 10.2, 10.1, 10.0)]
    slow = [experiment("batch1", B200, seconds) for seconds in (40.0, 40.2, 40.1, 40.3, 40.0)]
    rejected = experiment("batch4", B200, 5.0, status="rejected", quality="failed: quality")
    result = CliRunner().invoke(main, ["report", "--experiment", "scenario", "--out", str(tmp_path / "out"),
                                       "--variants-file", str(VARIANTS), "--catalog", str(CATALOG)])
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    standing = {run_id: client.get_run(run_id).data.tags.get(schema.STANDING) for run_id in [*fast, *slow, rejected]}
    assert {standing[run_id] for run_id in fast} == {"chosen"}
    assert {standing[run_id] for run_id in slow} <= {"costs more", "slower at the same cost", "misses the deadline"}
    assert standing[rejected] == "infeasible"
    (decided,) = client.search_runs([client.get_experiment_by_name("scenario").experiment_id],
                                    filter_string=f"tags.`{schema.ROLE}` = '{schema.DECISION_ROLE}'")
    assert decided.info.run_name == "batch8 · chosen · not yet confirmed"  # no confirmation run yet
    assert ui.runs_path(decided.info.experiment_id) in decided.data.tags[schema.NOTE]
    committed = {run_id: client.get_run(run_id).data.metrics.get(f"{schema.PASS_COMMITTED}_usd")
                 for run_id in [*fast, rejected]}
    assert {committed[run_id] for run_id in fast} == {decided.data.metrics["committed_cost_usd"]}  # the view's column
    assert committed[rejected] is None  # infeasible: nothing committed, never 0
    # One vocabulary (report/standing.py): the passes' tags and the description's standing column use its words only.
    assert {value.split(" · ")[0] for value in standing.values()} <= set(standing_words.WORDS)
    lines = decided.data.tags[schema.NOTE].replace("&nbsp;", "").splitlines()  # its table pads each cell
    start = next(i for i, line in enumerate(lines) if line.startswith("| configuration | standing |"))
    column = [line.split("|")[2].strip() for line in itertools.takewhile(lambda line: line.startswith("|"),
                                                                          lines[start + 2:])]
    assert column and set(column) <= set(standing_words.WORDS), column


@pytest.mark.unit
def test_a_pass_standing_is_written_only_where_it_changed(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("stand")
    runs = [client.create_run(experiment_id, tags={schema.VARIANT: "batch8"}).info.run_id for _ in range(3)]
    assert decision_run.stand(client, experiment_id, dict.fromkeys(runs, "chosen")) == 3
    assert decision_run.stand(client, experiment_id, {runs[0]: "chosen", runs[1]: "runner-up", runs[2]: "chosen"}) == 1
    assert [client.get_run(run_id).data.tags[schema.STANDING] for run_id in runs] == ["chosen", "runner-up", "chosen"]


@pytest.mark.unit
def test_campaign_medians_are_logged_once_when_it_finishes_not_as_a_running_series(store):
    from gpucost_mlflow.tracking.campaign_run import CampaignRun, Opening

    client = MlflowClient()
    experiment_id = client.create_experiment("campaign")
    run = CampaignRun.open(client, experiment_id, Opening("c1", "campaign c1: batch1", ["batch1"], 3, "p", "warm", []))
    for done in (1, 2, 3):
        attempts = [{"variant": "batch1", "status": "accepted", "pass_s": 3.0 + i} for i in range(done)]
        run.show(descriptions.campaign_note("c1", ["batch1"], 3, attempts, "running"),
                 descriptions.campaign_progress(attempts), done)
        assert not client.get_run(run.run_id).data.metrics  # nothing logged while it runs: the description shows it
    run.finish()
    logged = client.get_run(run.run_id).data.metrics
    assert logged == {schema.PASSES_FINISHED: 3.0, schema.PASSES_ACCEPTED: 3.0, f"{schema.MEDIAN_STEADY_LAP_PREFIX}batch1": 4.0}
    assert all(len(client.get_metric_history(run.run_id, key)) == 1 for key in logged)


@pytest.mark.unit
def test_the_decision_descriptions_table_is_sorted_by_cost_with_padded_cells():
    from tests.synthetic_report import decided_report

    note = decision_text.decision_note(decided_report(figures=False), {}, "1", 0)
    rows = [line for line in note.splitlines() if line.startswith("| &nbsp;") and "configuration" not in line]
    assert rows and all(cell.startswith("&nbsp;") and cell.endswith("&nbsp;")
                        for row in rows for cell in (c.strip() for c in row.strip("|").split("|")))
    costs = [row.split("|")[6].replace("&nbsp;", "").strip() for row in rows]
    priced = [float(cost.split()[0]) for cost in costs if cost.endswith("USD")]
    assert priced == sorted(priced) and costs[:len(priced)] == [c for c in costs if c.endswith("USD")]


@pytest.mark.unit
def test_only_benchmark_passes_run_by_hand_are_counted_outside_any_campaign():
    from gpucost_mlflow.core.inputs.identity import Identity
    from gpucost_mlflow.report.decided import outside_campaigns
    from gpucost_mlflow.tracking.recorded import Attempt, Place

    attempts = [Attempt(f"r{i}", Identity("cpu", "batch8"), place=Place(campaign_id=campaign, role=role))
                for i, (campaign, role) in enumerate([("c1", "benchmark"), ("", "confirmation"), ("", "deliverable"),
                                                      ("", "benchmark"), ("", "confirmation")])]
    assert outside_campaigns(attempts) == 1
    assert outside_campaigns(attempts[:0]) == 0


@pytest.mark.unit
def test_the_decision_description_dates_the_committed_price():
    import datetime as dt
    from dataclasses import replace

    from tests.synthetic_report import decided_report

    note = decision_text.decision_note(replace(decided_report(figures=False), written=dt.date(2026, 10, 1)), {}, "1", 0)
    assert "**catalog:** example (catalog/this-machine.csv); an undated example price, not a quote" in note


@pytest.mark.unit
def test_links_follow_where_a_local_store_is_served(monkeypatch):
    """A database store's links open where its UI is served: GPUCOST_UI_URL when set (`mlflow ui --port 5005`), the
    default port otherwise; a tracking server's own address always wins."""
    monkeypatch.setenv(ui.UI_URL, "http://127.0.0.1:5005/")
    assert runs_url("sqlite:///mlflow.db", "7").startswith("http://127.0.0.1:5005/#/experiments/7/runs?")
    assert link_line("sqlite:///mlflow.db", "7").startswith(
        "MLflow UI: run `mlflow ui --backend-store-uri sqlite:///mlflow.db --port 5005`, then open http://127.0.0.1:5005/")
    assert runs_url("http://mlflow.example.com", "7").startswith("http://mlflow.example.com/#/")
    monkeypatch.setenv(ui.UI_URL, "not a url")
    assert runs_url("sqlite:///mlflow.db", "7").startswith("http://127.0.0.1:5000/")
