"""The decision report (PROTOCOL §6, §8-11), on stores written through the project's own write path."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money import units
from gpucost_mlflow.report import render
from gpucost_mlflow.tracking import overlaps, schema
from tests.helpers import CATALOG, SHIPPED_PROTOCOL, VARIANTS, attempts_table
from tests.scenario import B200, RTX, report

pytestmark = pytest.mark.unit


def test_a_faster_variant_that_fails_quality_is_not_chosen(experiment):
    for seconds in (10.1, 10.3, 10.2, 10.0, 10.4):
        experiment("batch8", B200, seconds)
        experiment("batch8-int8", B200, seconds / 3, status="rejected", quality="failed: quality",
                   reason="quality: macro_f1 0.7 < 0.8")
    built, _ = report()
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200")
    assert "1 x 7-day b200 package, 1 lot: 2,071.00 USD" in built.decision
    int8 = next(a for a in built.assessments if a.configuration.variant == "batch8-int8")
    assert not int8.feasible and "rejected" in int8.feasibility


def test_overlapping_spreads_at_the_same_cost_are_a_tie_never_a_speed_ranking(experiment):
    for a, b in [(10.0, 10.2), (10.5, 9.9), (10.1, 10.4), (9.8, 10.0), (10.3, 10.1)]:
        experiment("batch4", B200, a)
        experiment("batch8", B200, b)
    built, _ = report()
    (series, separation), = built.separations
    assert series == "batch on NVIDIA B200" and not separation.decided
    assert separation.verdict.startswith("undecided: the 95 % interval of the difference")
    assert "add repetitions under the same protocol" in separation.verdict
    # The money is decided, the speed ranking is not: both are named, neither preferred.
    assert built.decision.startswith("Decision (tied): batch8 on NVIDIA B200 or batch4 on NVIDIA B200, "
                                     "1 x 7-day b200 package, 1 lot: 2,071.00 USD")  # batch8 first: the one to run
    assert "none is preferred on speed" in built.decision and "undecided: the 95 % interval of the difference" in built.decision


def test_an_out_of_memory_variant_is_infeasible(experiment):
    for seconds in (12.0, 12.2, 12.1, 11.9, 12.3):
        experiment("batch1", RTX, seconds)
        experiment("batch8", RTX, None, status="failed", reason="out of memory: CUDA out of memory")
    built, balance = report()
    batch8 = next(a for a in built.assessments if a.configuration.variant == "batch8")
    assert not batch8.feasible and "5 failed attempt(s)" in batch8.feasibility
    assert built.decision.startswith("Decision: batch1 on NVIDIA GeForce RTX 4090")
    row = balance[balance["variant"] == "batch8"].iloc[0]
    assert row["failed_attempts"] == 5 and pd.isna(row["pass_s_median"])


def test_no_accepted_deliverable_leaves_cost_per_validated_corpus_undefined(experiment):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    _, balance = report()
    assert balance["cost_per_validated_corpus"][0] == units.NO_RESULT
    assert balance["committed_cost"][0] == "110.00"
    experiment("batch8", RTX, 10.0, role="deliverable", fingerprint="d" * 64)
    experiment("batch8", RTX, 10.1, role="deliverable", fingerprint="d" * 64)
    experiment("batch8", RTX, 10.1, role="deliverable", fingerprint="e" * 64, status="rejected", quality="failed: quality")
    _, balance = report()
    assert balance["accepted_deliverables"][0] == 1  # one fingerprint, counted once; the rejected one not at all
    assert balance["cost_per_validated_corpus"][0] == "110.00"


def test_deliverables_count_only_on_corpora_the_protocol_declares(experiment):
    """The shipped protocol's volume is corpora of 1,000 inputs: an accepted 10-input deliverable is not one of them,
    and a deliverable run on the benchmark corpus itself delivers nothing new."""
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    experiment("batch8", RTX, 10.0, role="deliverable", fingerprint="d" * 64)
    experiment("batch8", RTX, 0.1, role="deliverable", fingerprint="f" * 64, metrics_extra={"expected_ids": 10})
    experiment("batch8", RTX, 10.0, role="deliverable", fingerprint="a" * 64)  # the benchmark passes' corpus
    _, balance = report()
    assert balance["accepted_deliverables"][0] == 1


def test_two_priced_devices_give_the_cheaper_covering_package(experiment):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds * 3)
        experiment("batch8", B200, seconds)
    built, _ = report()
    assert built.decision.startswith("Decision: batch8 on NVIDIA GeForce RTX 4090, 1 x 7-day rtx-4090 package, 1 lot: 110.00 USD")
    assert "next: batch8 on NVIDIA B200 at 2,071.00 USD" in built.decision


def test_an_unpriced_device_is_never_priced_as_another(experiment):
    for seconds in (7.5, 7.6, 7.7, 7.4, 7.8):
        experiment("batch1", "AMD EPYC", seconds)
    built, _ = report()
    assert built.decision.startswith("No decision: nothing priced (not priced: AMD EPYC has no package in 2026-09-24")


def test_a_first_report_with_nothing_priced_names_what_the_catalog_prices_and_points_to_fleet_plan(experiment):
    from gpucost_mlflow.report import card

    for seconds in (7.5, 7.6, 7.7, 7.4, 7.8):
        experiment("batch1", "AMD EPYC", seconds)
    built, _ = report()
    said = (f"Catalog 2026-09-24 prices b200 (2 GPUs per lot), rtx-4090 (1 GPU per lot): `gpucost fleet plan "
            f"--experiment scenario --protocol {SHIPPED_PROTOCOL} --catalog {CATALOG}` says which of them are worth "
            "measuring (a lower bound per offer, never a decision).")
    assert built.decision.endswith(said)
    assert dict(card.lines(built))["Would change it"].endswith(said)


def test_report_command_writes_four_files_and_logs_a_decision_run(experiment, tmp_path):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", "--experiment", "scenario", "--out", str(out), "--catalog", str(CATALOG),
                                       "--protocol", str(SHIPPED_PROTOCOL), "--variants-file", str(VARIANTS)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["attempts.csv", "balance.csv", "cost-volume.png", "durations.png",
                                                     "memory.png", "report.html", "report.md"]
    assert f"report: {(out / 'report.html').resolve()}" in result.output
    html = (out / "report.html").read_text()
    assert '<table id="attempts">' in html and "data:image/png;base64," in html and "no p95" in html
    assert len(pd.read_csv(out / "attempts.csv")) == 5
    client = MlflowClient()
    runs = client.search_runs([mlflow.get_experiment_by_name("scenario").experiment_id], filter_string="tags.`gpucost.role` = 'decision'")
    assert len(runs) == 1
    assert {a.path for a in client.list_artifacts(runs[0].info.run_id)} == {"report.md", "report.html", "attempts.csv",
                                                                            "balance.csv", "cost-volume.png", "durations.png",
                                                                            "memory.png"}
    note = runs[0].data.tags["mlflow.note.content"]  # the description names every file the run holds
    assert all(f"`{name}`" in note for name in ("report.html", "cost-volume.png", "durations.png", "memory.png"))


def test_one_report_resolves_its_experiment_by_name_once(experiment, tmp_path, monkeypatch):
    """The experiment (id, name, tags) is resolved once per `gpucost report` and handed to the re-judging, the read
    of the evidence, the report and the decision run (issue 54; seven look-ups by name before)."""
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds)
    asked = []
    by_name = MlflowClient.get_experiment_by_name
    monkeypatch.setattr(MlflowClient, "get_experiment_by_name",
                        lambda self, name: asked.append(name) or by_name(self, name))
    result = CliRunner().invoke(main, ["report", "--experiment", "scenario", "--out", str(tmp_path / "out"),
                                       "--catalog", str(CATALOG), "--variants-file", str(VARIANTS)])
    assert result.exit_code == 0, result.output
    assert asked == ["scenario"]


def test_report_strings_from_runs_are_escaped_in_html(experiment):
    from gpucost_mlflow.report.render import page

    experiment("<script>alert(1)</script>", B200, 10.0)
    built, _ = report()
    text = page(built)
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_run_names_notes_and_error_messages_reach_the_html_as_text(experiment):
    from gpucost_mlflow.report.render import page

    experiment("batch8", B200, 10.0, run_name="<script>alert('name')</script>", note="<script>alert('note')</script>")
    experiment("batch8", B200, None, status="failed", run_name="<script>alert('run')</script>",
               reason="<img src=x onerror=alert('error')> CUDA out of memory")
    built, _ = report()
    text = page(built)
    assert "<script" not in text and "<img src=x" not in text
    assert "&lt;img src=x onerror=alert(&#x27;error&#x27;)&gt; CUDA out of memory" in text


def protocol_like_shipped(tmp_path, *, drop_deadline=False, drop_plan=False, expected=None, append="") -> Path:
    """The shipped protocol with its deadline or plan left out, another expected volume, or more fields."""
    lines = SHIPPED_PROTOCOL.read_text().splitlines()
    if drop_deadline:
        lines = [line for line in lines if not line.startswith("deadline:")]
    if drop_plan:
        start = lines.index(next(line for line in lines if line.startswith("plan:")))
        end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
        lines = lines[:start] + lines[end:]
    text = "\n".join(lines) + "\n" + append
    if expected is not None:
        text = text.replace("  expected: 1\n", f"  expected: {expected}\n")
    path = tmp_path / "protocol.yaml"
    path.write_text(text)
    return path


SIX_HOURS = 6 * 3600.0


def test_forecast_counts_every_comparison_attempt_wall_time_failed_ones_included(experiment):
    for _ in range(5):
        for variant in ("batch1", "batch4", "batch8"):
            experiment(variant, B200, SIX_HOURS)
    experiment("batch8-int8", B200, None, status="failed", reason="out of memory", wall_s=2 * 3600)
    built, balance = report()
    batch8 = next(a for a in built.assessments if a.configuration.variant == "batch8")
    f = batch8.forecast
    walls = 15 * (1.0 + 3.0 + 0.5 + SIX_HOURS + 0.1 + 0.2) + 2 * 3600
    assert f.comparisons == 16 and f.comparisons_h == pytest.approx(walls / 3600)
    assert f.hours == pytest.approx(4 + 0 + walls / 3600 + 2 * 3.5 / 3600 + (SIX_HOURS + 0.3) / 3600)
    assert f.hours > 100  # fifteen 6-hour passes are not a 7-hour campaign
    assert batch8.deadline_status == "missed" and not batch8.meets_deadline
    assert built.decision.startswith("No decision: deadline missed")
    row = balance[balance["variant"] == "batch8"].iloc[0]
    assert row["comparison_attempts"] == 16 and row["setup_h"] == 4
    markdown = render.markdown(built)
    assert "comparisons on the real schedule (h, attempts on the device)" in markdown and "range (h): fastest-slowest pass" in markdown


def test_a_window_longer_than_every_package_is_budgeted_as_consecutive_periods(experiment, tmp_path):
    for seconds in (40 * 3600.0, 40.1 * 3600, 39.9 * 3600, 40.2 * 3600, 40 * 3600.0):
        experiment("batch8", B200, seconds)
    built, _ = report(protocol_path=protocol_like_shipped(tmp_path, drop_deadline=True))
    (a,) = built.assessments
    assert 168 < a.forecast.hours <= 336
    assert a.plan.periods == 2 and a.committed == Decimal("4142.00")
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200, 2 x 7-day b200 package, 1 lot: 4,142.00 USD")
    assert "uses 1 of the lot's 2 GPUs" in built.decision


def test_a_protocol_without_deadline_decides_and_says_no_deadline_declared(experiment, tmp_path):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, drop_deadline=True))
    assert built.decision.startswith("Decision: batch8 on NVIDIA GeForce RTX 4090")
    assert "no deadline declared" in built.decision and "deadline missed" not in built.decision
    assert balance["deadline_status"][0] == "no deadline declared" and balance["deadline"][0] == ""


def test_a_protocol_without_plan_gives_no_forecast_never_deadline_missed(experiment, tmp_path):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, drop_plan=True))
    assert built.decision.startswith("No decision: no plan: no forecast")
    (a,) = built.assessments
    assert a.forecast is None and a.deadline_status == "not checked: no plan: no forecast"
    assert balance["package"][0] == "not priced: no plan: no forecast"
    assert "deadline missed" not in render.markdown(built)


def test_500_expected_deliverables_scale_the_forecast_and_none_counts_as_accepted(experiment, tmp_path):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, expected=500))
    (a,) = built.assessments
    assert a.forecast.deliverables == 500
    assert a.forecast.deliverables_h == pytest.approx(500 * (10.1 + 0.3) / 3600)
    assert a.forecast.low_hours < a.forecast.hours < a.forecast.high_hours
    assert a.configuration.accepted_deliverables == 0
    assert balance["cost_per_validated_corpus"][0] == units.NO_RESULT
    assert "500 expected deliverables, one deliverable after another (forecast)" in a.forecast.terms()


OTHER_COSTS = """other_costs:
  - {label: result storage, amount: 12.50, currency: USD, basis: 30 days of object storage for the deliverables}
"""


def test_other_costs_are_listed_apart_never_folded_into_a_configuration(experiment, tmp_path):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, append=OTHER_COSTS))
    assert built.assessments[0].committed == Decimal("110.00")
    other = balance[balance["entry"] == "other cost"].iloc[0]
    assert other["committed_cost"] == "12.50" and other["package"].startswith("result storage: 30 days")
    assert "### Other costs" in render.markdown(built) and "12.50 USD" in render.markdown(built)


def test_other_costs_in_another_currency_are_refused_in_one_line(experiment, tmp_path):
    experiment("batch8", RTX, 10.0)
    with pytest.raises(GpucostError, match="other_costs\\[1\\] \\(result storage\\) is in EUR.*one comparison uses one currency"):
        report(protocol_path=protocol_like_shipped(tmp_path, append=OTHER_COSTS.replace("USD", "EUR")))


def test_break_even_volume_is_stated_for_two_priced_devices(experiment):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds * 3)
        experiment("batch8", B200, seconds)
    built, _ = report()
    (line,) = built.break_evens
    assert line.startswith("batch8 on NVIDIA GeForce RTX 4090 vs batch8 on NVIDIA B200: at 1 expected deliverable(s) "
                           "batch8 on NVIDIA GeForce RTX 4090 is cheaper (110.00 vs 2,071.00 USD, forecast)")
    assert "Break-even volume (forecast)" in render.markdown(built)


def test_this_machine_priced_at_an_example_price_reaches_a_labelled_decision(experiment, tmp_path):
    from gpucost_mlflow.core.money.catalog import example_catalog

    for seconds in (7.5, 7.6, 7.7, 7.4, 7.8):
        experiment("batch8", "AMD EPYC", seconds)
    path = tmp_path / "this-machine.csv"
    path.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-11-30"))
    built, _ = report(catalog=path)
    assert built.decision.startswith("Decision: batch8 on AMD EPYC, this-machine hourly, 1 lot, 5 h billed")
    assert "example price" in built.decision and "not a provider's quote" in built.decision
    assert built.title == "Decision report (what-if: example price): scenario"
    assert render.markdown(built).startswith("# Decision report (what-if: example price): scenario")


def test_passes_with_another_model_revision_or_stack_are_another_configuration_named_so(experiment):
    old = {"model.revision": "a" * 64, "stack.torch_build": "2.13.0+cu130", "stack.driver": "580.1"}
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds, params=old)
        experiment("batch8", B200, seconds / 2, params={**old, "model.revision": "b" * 64, "stack.driver": "590.2"})
    built, balance = report()
    names = [a.configuration.name for a in built.assessments]
    assert names == ["batch8 [model revision aaaaaaaaaaaa, driver 580.1] on NVIDIA B200",
                     "batch8 [model revision bbbbbbbbbbbb, driver 590.2] on NVIDIA B200"]
    assert all(len(a.configuration.durations.values) == 5 for a in built.assessments)
    (note,) = [w for w in built.warnings if "configurations, reported apart" in w]
    assert note.startswith("batch8 on NVIDIA B200 is 2 configurations, reported apart: model revision aaaaaaaaaaaa")
    assert list(balance["distinction"][:2]) == ["model revision aaaaaaaaaaaa, driver 580.1",
                                                "model revision bbbbbbbbbbbb, driver 590.2"]


def test_a_tie_between_configurations_told_apart_by_model_revision_logs_its_decision_run(experiment, tmp_path):
    """A configuration's name holds '[', ',' and '+' when it is told apart by its identity; MLflow refuses those in a
    metric name, and logging the decision once failed there. Each candidate's metrics keep a name MLflow takes."""
    old = {"model.revision": "a" * 64, "stack.driver": "580.1"}
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds, params=old)
        experiment("batch8", B200, seconds, params={**old, "model.revision": "b" * 64})
    result = CliRunner().invoke(main, ["report", "--experiment", "scenario", "--out", str(tmp_path / "out"),
                                       "--catalog", str(CATALOG), "--variants-file", str(VARIANTS)])
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    (run,) = client.search_runs([mlflow.get_experiment_by_name("scenario").experiment_id],
                                filter_string="tags.`gpucost.role` = 'decision'")
    committed = sorted(key for key in run.data.metrics if key.startswith("committed_cost_usd/"))
    assert committed == ["committed_cost_usd/batch8 _model revision aaaaaaaaaaaa_",
                         "committed_cost_usd/batch8 _model revision bbbbbbbbbbbb_"]
    assert run.data.metrics["candidates"] == 2.0


def test_metric_parts_keep_what_mlflow_takes_and_never_merge_two_candidates():
    assert schema.metric_parts(["batch8 [model a, driver 1] on L4 + A10G", "a+b", "a,b", ".."]) == {
        "batch8 [model a, driver 1] on L4 + A10G": "batch8 _model a_ driver 1_ on L4 _ A10G", "a+b": "a_b",
        "a,b": "a_b 2", "..": "_"}


def test_passes_before_and_after_a_torch_upgrade_are_two_configurations_never_pooled(experiment):
    stack = {"stack.torch_build": "cuda 12.8", "stack.transformers_version": "5.24.0", "stack.engine_version": "2.12.0"}
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds, params={**stack, "stack.torch_version": "2.12.0"})
        experiment("batch8", B200, seconds * 0.8, params={**stack, "stack.torch_version": "2.13.0",
                                                          "stack.engine_version": "2.13.0"})
    built, _ = report()
    names = [a.configuration.name for a in built.assessments]
    assert names == ["batch8 [torch 2.12.0, engine version 2.12.0] on NVIDIA B200",
                     "batch8 [torch 2.13.0, engine version 2.13.0] on NVIDIA B200"]
    assert [a.configuration.durations.values for a in built.assessments] == [
        (10.0, 10.1, 10.2, 10.1, 10.0), tuple(s * 0.8 for s in (10.0, 10.1, 10.2, 10.1, 10.0))]


def test_two_passes_measured_at_once_on_one_host_are_both_flagged_naming_each_other(experiment):
    first = experiment("batch8", B200, 30.0, span=(1000.0, 1030.0), host="rented-1")
    second = experiment("batch8", B200, 31.0, span=(1010.0, 1041.0), host="rented-1")
    elsewhere = experiment("batch8", B200, 30.5, span=(1010.0, 1040.5), host="rented-2")
    alone = experiment("batch8", B200, 10.0, span=(2000.0, 2010.0), host="rented-1")
    table = attempts_table("scenario")
    flagged = dict(zip(table["run_id"], table["overlapped_with"]))
    assert flagged == {first: second, second: first, elsewhere: "", alone: ""}
    assert f"overlapped (same host rented-1): {second}" in table["notes"][0]
    built, _ = report()
    assert built.summaries[0].overlapped == 2
    assert "| 2 of 4 |" in render.markdown(built)
    assert overlaps.mark(MlflowClient(), second) == [first]
    for run_id, other in ((first, second), (second, first)):
        tags = MlflowClient().get_run(run_id).data.tags
        assert tags[schema.OVERLAPPED_WITH] == other and other in tags["mlflow.note.content"]
    assert schema.OVERLAPPED_WITH not in MlflowClient().get_run(elsewhere).data.tags


def test_the_report_states_the_campaigns_own_harness_overhead_per_pass_one_definition(experiment):
    from gpucost_mlflow.tracking.campaign_run import CampaignRun, Opening

    client = MlflowClient()
    experiment_id = client.get_experiment_by_name("scenario").experiment_id
    figures = {"c1": 0.9, "c2": 0.3}  # as each campaign printed and logged it
    for cid, seconds in figures.items():
        run = CampaignRun.open(client, experiment_id, Opening(cid, f"campaign {cid}", ["batch8"], 3, "d" * 64, "policy", []))
        run.record_end(seconds, {})
        run.finish()
    for cid, passes in (("c1", 3), ("c2", 1)):
        for _ in range(passes):
            experiment("batch8", RTX, 10.0, params={schema.CAMPAIGN_ID: cid})
    experiment("batch8", RTX, 10.0)  # outside any campaign: no gaps to count
    built, _ = report()
    assert built.overhead == (pytest.approx((3 * 0.9 + 0.3) / 4), 4, 2)
    assert "Harness overhead per pass: 0.75 s (each campaign's own figure, `harness_overhead_s_per_pass`, weighted " \
           "by its attempts: 4 attempts in 2 campaign(s)" in render.markdown(built)


def test_the_overlap_finder_reads_every_page_of_candidates(experiment, monkeypatch):
    runs = [experiment("batch8", B200, 30.0, span=(1000.0 + i, 1030.0 + i), host="rented-1") for i in range(5)]
    search_runs = MlflowClient.search_runs

    def small_pages(self, *args, **kwargs):  # a store that answers two runs a page, as a server caps its pages
        return search_runs(self, *args, **{**kwargs, "max_results": min(kwargs.get("max_results", 2), 2)})

    monkeypatch.setattr(MlflowClient, "search_runs", small_pages)
    assert sorted(overlaps.mark(MlflowClient(), runs[-1])) == sorted(runs[:-1])


def test_energy_per_pass_and_per_validated_corpus_or_empty_with_the_reason(experiment):
    client = MlflowClient()
    for seconds, joules in ((10.0, 2000.0), (10.1, 2100.0), (10.2, 2050.0)):
        run_id = experiment("batch8", B200, seconds)
        client.log_metric(run_id, "energy_j", joules)
        client.log_metric(run_id, "energy_net_j", joules - 100.0 * seconds)  # 100 W idle over pass_s
    for seconds in (7.0, 7.1, 7.2):
        experiment("batch1", RTX, seconds, tags_extra={"gpucost.missing.energy_j": "NVML absent (nvidia-ml-py not installed)"})
    built, _ = report()
    by_variant = {s.configuration.variant: s for s in built.summaries}
    assert by_variant["batch8"].joules_per_pass == 2050.0 and by_variant["batch8"].joules_per_validated == 2050.0
    assert by_variant["batch1"].joules_per_pass is None and "NVML absent" in by_variant["batch1"].energy_reason
    markdown = render.markdown(built)
    assert by_variant["batch8"].joules_net_per_pass == pytest.approx(1030.0)  # the median of 1000, 1090, 1030
    assert "| NVIDIA B200 | batch8 | 2,050.0 | 1,030.0 | 2,050.0 |" in markdown
    assert "| NVIDIA GeForce RTX 4090 | batch1 | empty [1] | empty [1] | empty [1] |" in markdown
    assert "- [1] NVML absent (nvidia-ml-py not installed)" in markdown
    assert '<table id="energy">' in render.page(built)


def test_a_fast_repeated_and_a_slow_single_variant_are_compared_on_one_corpus_each(experiment):
    """batch8's clock repeated the corpus: its pass_s is a mean over laps, tight (1.00-1.01 s), while its first laps,
    one corpus each as batch4's single-corpus passes are, spread 1.0-1.6 s. Stability and the slowest pass read the
    laps; separation reads each pass's whole clock (test_demo_protocol: never a sub-second lap)."""
    firsts = (1.0, 1.6, 1.0, 1.1, 1.0)
    for mean, first, single in zip((1.00, 1.01, 1.00, 1.01, 1.00), firsts, (2.0, 2.1, 2.0, 2.05, 2.0)):
        experiment("batch8", B200, mean, metrics_extra={"first_lap_s": first, "repetitions": 10.0})
        experiment("batch4", B200, single)
    built, _ = report()
    batch8 = next(a for a in built.assessments if a.configuration.variant == "batch8")
    assert batch8.configuration.durations.values == firsts
    assert not batch8.stable and batch8.unstable.startswith("unstable: re-measure (max/min 1.60 > 1.5")
