"""Start-up as the deliverables really run (issue 39, item 5): `gpucost deliver --corpora DIR` processes many corpora in
one child each `deliverables.per_child` of them, one run per corpus under a delivery run, and the forecast counts one
load and warm-up per child, as the delivery ran them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.names import LOAD_S, SHAPE_SETUP_S, WARMUP_S
from gpucost_mlflow.tracking import schema
from tests.helpers import CATALOG, PROTOCOL_TEMPLATE, VARIANTS, cli_runner, evidence_of, run_pass

PLAN = 'plan: {start: "2026-11-30T09:00:00+01:00", setup_hours: 1}\n'


def _corpora(corpus_dir: Path, folder: Path) -> Path:
    """Three production corpora of the protocol's 30 inputs, none the benchmark corpus: the tuning corpus, the
    confirmation corpus and half of each."""
    rows = {name: (corpus_dir / f"{name}.jsonl").read_text().splitlines() for name in ("tuning", "confirmation")}
    folder.mkdir()
    (folder / "a.jsonl").write_text("\n".join(rows["tuning"]) + "\n")
    (folder / "b.jsonl").write_text("\n".join(rows["confirmation"]) + "\n")
    (folder / "c.jsonl").write_text("\n".join(rows["tuning"][:15] + rows["confirmation"][15:]) + "\n")
    return folder


@pytest.mark.unit
def test_the_forecast_counts_one_start_up_per_child_of_per_child_corpora():
    from gpucost_mlflow.core.measurement.stats import Durations
    from gpucost_mlflow.core.money.forecast import Delivery, forecast

    plan = {"setup_hours": 0.0, "waiting_hours": 0.0, "planned_restarts": 1}
    medians = {LOAD_S: 30.0, WARMUP_S: 6.0}  # 36 s a start-up, 0.01 h
    one = forecast(plan, 2000, Durations((1.8,) * 5), medians, ())
    each = forecast(plan, 2000, Durations((1.8,) * 5), medians, (), delivery=Delivery(per_child=1))
    fifty = forecast(plan, 2000, Durations((1.8,) * 5), medians, (), delivery=Delivery(per_child=500))
    assert (one.startup_h, each.startup_h, fifty.startup_h) == pytest.approx((0.02, 20.01, 0.05))
    assert "(1 + 1 restarts) x load + warm-up" in one.terms()
    assert "20.0 h start-up ((2,000 children of 1 corpus + 1 restarts) x load + warm-up)" in each.terms()
    # another volume counts its own children: 10 corpora one per child start 10 times
    assert each.hours_for(10) - each.hours_for(5) == pytest.approx(5 * 0.01 + 5 * 1.8 / 3600)


@pytest.mark.integration
def test_a_three_corpus_delivery_runs_as_the_forecast_counts_it(store, corpus_dir, model_dir, tmp_path):
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.core.money.forecast import Delivery, forecast
    from gpucost_mlflow.report.configurations import configurations
    from gpucost_mlflow.report.measured import ReportAttempts

    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(PROTOCOL_TEMPLATE.format(threshold=0.0, max_diff=0.05, min_agreement=0.8).replace(
        "deliverables: {expected: 1, description: the slice classified once}",
        "deliverables: {expected: 3, description: three corpora, per_child: 2}") + PLAN)
    declared = load_protocol(protocol)
    assert declared.deliverables["per_child"] == 2
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol).exit_code == 0  # the benchmark pass

    result = cli_runner().invoke(main, [
        "deliver", "--corpora", str(_corpora(corpus_dir, tmp_path / "corpora")), "--variant", "batch8",
        "--variants", str(VARIANTS), "--model", str(model_dir), "--experiment", "t", "--protocol", str(protocol)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].startswith("delivery run ") and \
        result.output.splitlines()[-1].endswith(": 3 corpora in 2 children, 3 accepted")

    client = MlflowClient()
    experiment_id = client.get_experiment_by_name("t").experiment_id
    (delivery,) = client.search_runs([experiment_id], f"tags.`{schema.ROLE}` = '{schema.DELIVERY_ROLE}'")
    assert delivery.data.metrics["delivery_children"] == 2 and delivery.data.params["delivery.per_child"] == "2"
    nested = client.search_runs([experiment_id], f"tags.`{schema.PARENT_RUN_ID}` = '{delivery.info.run_id}'",
                                order_by=["attributes.start_time ASC"])
    assert len(nested) == 3
    loaded = [run for run in nested if LOAD_S in run.data.metrics]
    assert len(loaded) == 2  # one load and warm-up per child: the first corpus of each
    (later,) = [run for run in nested if LOAD_S not in run.data.metrics]
    assert later.data.params[f"{schema.MISSING_PREFIX}{LOAD_S}"].startswith("loaded and warmed up once")

    measured = ReportAttempts.of(evidence_of("t").attempts)
    delivered = measured.table[measured.table["role"] == "deliverable"]
    assert list(delivered["status"]) == [Status.ACCEPTED] * 3
    (config,) = configurations(measured, declared.corpus_size)
    assert config.accepted_deliverables == 3
    f = forecast(declared.plan, 3, config.durations, config.medians, config.attempt_spans,
                 delivery=Delivery(per_child=declared.deliverables["per_child"]))
    assert f.children(3) == delivery.data.metrics["delivery_children"] == len(loaded)
    assert f.startup_h == pytest.approx(2 * _startup_s(config) / 3600)  # and each child's shape setup
    assert "(2 children of 2 corpora + 0 restarts) x load + warm-up" in f.terms()


@pytest.mark.unit
@pytest.mark.parametrize("make, says", [
    (lambda folder: None, "not a folder of corpora"),
    (lambda folder: folder.mkdir(), "no corpus (*.jsonl) to deliver"),
])
def test_a_delivery_without_corpora_is_refused_in_one_line(tmp_path, make, says):
    folder = tmp_path / "corpora"
    make(folder)
    result = cli_runner().invoke(main, ["deliver", "--corpora", str(folder), "--variant", "batch8"])
    assert result.exit_code == 2 and result.stderr == f"Error: {folder}: {says}\n"


@pytest.mark.unit
def test_per_child_must_be_a_whole_number_or_all(tmp_path):
    from gpucost_mlflow.core.errors import GpucostError
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from tests.test_report import protocol_like_shipped

    text = protocol_like_shipped(tmp_path).read_text()
    for value, expected in (("all", None), ("4", 4)):
        path = tmp_path / f"p-{value}.yaml"
        path.write_text(text.replace("deliverables:\n", f"deliverables:\n  per_child: {value}\n", 1))
        assert load_protocol(path).deliverables["per_child"] == expected
    path.write_text(text.replace("deliverables:\n", "deliverables:\n  per_child: 0\n", 1))
    with pytest.raises(GpucostError, match="field 'deliverables.per_child' must be a whole number >= 1 or 'all', got 0"):
        load_protocol(path)


def _rules(plan: dict, expected: int, **more):
    """The decision's rules for these tests: the test catalog, no deadline."""
    from gpucost_mlflow.core.money.catalog import load_catalog
    from gpucost_mlflow.core.money.decision import Rules

    return Rules(load_catalog(CATALOG), plan, None, expected, **more)


def _config(device: str, variant: str, pass_s: float, load_s: float, warmup_s: float, lanes: str = "1"):
    """A configuration of five accepted passes of pass_s, with its median load and warm-up and its lanes."""
    from gpucost_mlflow.core.inputs.identity import Identity
    from gpucost_mlflow.core.measurement.stats import Durations
    from gpucost_mlflow.core.money.decision import Configuration

    return Configuration(device, variant, [Status.ACCEPTED] * 5, Durations((pass_s,) * 5),
                         {LOAD_S: load_s, WARMUP_S: warmup_s}, identity=Identity(device, variant, lanes=lanes))


@pytest.mark.unit
def test_a_lanes_configuration_is_forecast_with_a_fresh_start_up_per_corpus():
    from gpucost_mlflow.core.money.decision import assess

    plan = {"setup_hours": 0.0, "waiting_hours": 0.0, "planned_restarts": 1}  # 30 s load + 6 s warm-up: 0.01 h
    one, two = assess([_config("cpu", "batch8", 1.8, 30.0, 6.0), _config("cpu", "batch8-lanes2", 1.8, 30.0, 6.0, "2")],
                      _rules(plan, 2000, per_child=500))
    assert one.forecast.children(2000) == 4 and one.forecast.startup_h == pytest.approx((4 + 1) * 0.01)
    # `gpucost deliver` runs a lanes variant one corpus at a time through fresh lane children, whatever per_child says
    assert two.forecast.children(2000) == 2000 and two.forecast.startup_h == pytest.approx((2000 + 1) * 0.01)
    assert ("20.0 h start-up ((2,000 children of 1 corpus, a lanes configuration's fresh child per corpus + 1 "
            "restarts) x load + warm-up)") in two.forecast.terms()
    assert two.forecast.hours_for(10) - two.forecast.hours_for(5) == pytest.approx(5 * 0.01 + 5 * 1.8 / 3600)
    assert two.forecast.marginal_h(2) == pytest.approx(0.01 + 1.8 / 3600)


@pytest.mark.unit
def test_a_declared_audit_adds_the_reference_variants_own_child_per_delivered_corpus():
    from gpucost_mlflow.core.money.decision import assess
    from gpucost_mlflow.core.money.startups import audit_rule

    plan = {"setup_hours": 0.0, "waiting_hours": 0.0, "planned_restarts": 0}
    configs = [_config("cpu", "batch8", 3.0, 2.0, 1.0),  # the reference: 0.1 s per input of the 30-input corpus
               _config("cpu", "batch4", 1.5, 4.0, 2.0),
               _config("gpu-x", "batch4", 0.6, 5.0, 1.0)]  # the reference not measured on this device
    audit = audit_rule({"sample": 8, "min_label_agreement": 0.5}, "batch8", 30)
    _, four, alone = assess(configs, _rules(plan, 3, audit=audit))
    _, plain, _ = assess(configs, _rules(plan, 3))
    each = (2.0 + 1.0 + 8 * 3.0 / 30) / 3600  # the reference's load + warm-up and 8 inputs at its per-input time
    f = four.forecast
    assert f.audits(3) == 3 and f.audit_h == pytest.approx(3 * each) and plain.forecast.audit_h == 0
    assert f.hours == pytest.approx(plain.forecast.hours + 3 * each)
    assert f.hours_for(10) - f.hours_for(5) == pytest.approx(5 * (each + 1.5 / 3600))
    assert ("0.003 h deliverables audit (3 x batch8's own child per delivered corpus: 3 s load + warm-up + 8 inputs x "
            "0.1 s (batch8's measured passes))") in f.terms()
    assert alone.forecast.audit_h == pytest.approx(3 * (5.0 + 1.0 + 8 * 0.6 / 30) / 3600)
    assert "batch8 not measured on gpu-x: batch4's own passes" in alone.forecast.terms()


@pytest.mark.unit
def test_the_spare_capacity_counts_each_corpus_audit_and_a_lanes_start_up_per_corpus():
    from gpucost_mlflow.core.money import units
    from gpucost_mlflow.core.money.catalog import load_catalog
    from gpucost_mlflow.core.money.forecast import Audit, Forecast
    from gpucost_mlflow.core.money.plans import covering_plans, to_hours

    # a 7-day package (168 h), 4 h fixed, 0.5 h per corpus: 328 corpora; a 0.1 h audit or start-up per corpus: 273
    plan = covering_plans(load_catalog(CATALOG).for_gpu("rtx-4090"), to_hours(6.0), 1)[0]
    base = Forecast(4.0, 0.0, 0.0, 0, 0, 0, 0.0, 4, (0.5, 0.5, 0.5))
    audited = Forecast(4.0, 0.0, 0.0, 0, 0, 0, 0.0, 4, (0.5, 0.5, 0.5), audit=Audit("batch8", 1, 350.0, 10.0, "x"))
    lanes = Forecast(4.0, 0.0, 0.0, 0, 0, 0, 0.4, 4, (0.5, 0.5, 0.5), startup_each_h=0.1, lanes=2)
    assert [units.spare(f, plan).capacity for f in (base, audited, lanes)] == [328, 273, 273]


def _protocol(tmp_path: Path, deliverables: str) -> Path:
    """The test protocol for three expected corpora with these deliverables fields, and a plan."""
    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(PROTOCOL_TEMPLATE.format(threshold=0.0, max_diff=0.05, min_agreement=0.8).replace(
        "deliverables: {expected: 1, description: the slice classified once}",
        f"deliverables: {{expected: 3, description: three corpora, {deliverables}}}") + PLAN)
    return protocol


def _delivered(variant: str, corpora: Path, model_dir: Path, protocol: Path, variants: Path = VARIANTS):
    """`gpucost deliver` of the folder's corpora; the delivery run and its nested runs, oldest first."""
    result = cli_runner().invoke(main, [
        "deliver", "--corpora", str(corpora), "--variant", variant, "--variants", str(variants),
        "--model", str(model_dir), "--experiment", "t", "--protocol", str(protocol)])
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    experiment_id = client.get_experiment_by_name("t").experiment_id
    (delivery,) = client.search_runs([experiment_id], f"tags.`{schema.ROLE}` = '{schema.DELIVERY_ROLE}'")
    nested = client.search_runs([experiment_id], f"tags.`{schema.PARENT_RUN_ID}` = '{delivery.info.run_id}'",
                                order_by=["attributes.start_time ASC"])
    return result.output.splitlines()[-1], delivery, nested


@pytest.mark.integration
def test_a_lanes_variant_is_delivered_one_corpus_per_fresh_child_as_the_forecast_counts_it(store, corpus_dir,
                                                                                          model_dir, tmp_path):
    import yaml

    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.core.money.decision import assess
    from gpucost_mlflow.report.configurations import configurations
    from gpucost_mlflow.report.measured import ReportAttempts

    variants = tmp_path / "variants.yaml"
    variants.write_text(yaml.safe_dump({"defaults": yaml.safe_load(VARIANTS.read_text())["defaults"],
                                        "variants": {"batch8": {}, "batch8-lanes2": {"lanes": 2}}}))
    protocol = _protocol(tmp_path, "per_child: 2")
    declared = load_protocol(protocol)
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol, "batch8-lanes2",
                    variants=variants).exit_code == 0

    last, delivery, nested = _delivered("batch8-lanes2", _corpora(corpus_dir, tmp_path / "corpora"), model_dir,
                                        protocol, variants)
    assert last.endswith(": 3 corpora in 3 children, 3 accepted")  # per_child: 2 does not group a lanes variant
    assert delivery.data.params["delivery.per_child"] == "1" and "lanes" in delivery.data.tags[schema.NOTE]
    assert len(nested) == 3 and all(run.data.params["setting.lanes"] == "2" for run in nested)
    loaded = [run for run in nested if LOAD_S in run.data.metrics]
    assert len(loaded) == 3  # every corpus loaded and warmed up in fresh lane children

    (config,) = configurations(ReportAttempts.of(evidence_of("t").attempts), declared.corpus_size)
    (assessed,) = assess([config], _rules(declared.plan, 3, per_child=declared.deliverables["per_child"]))
    f = assessed.forecast
    assert f.children(3) == delivery.data.metrics["delivery_children"] == len(loaded) == 3
    assert f.startup_h == pytest.approx(3 * _startup_s(config) / 3600)
    assert "(3 children of 1 corpus, a lanes configuration's fresh child per corpus + 0 restarts)" in f.terms()


@pytest.mark.integration
def test_a_declared_audit_starts_a_reference_child_per_delivered_corpus_as_the_forecast_counts_it(store, corpus_dir,
                                                                                                 model_dir, tmp_path):
    import json

    import mlflow

    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.core.inputs.variants import load_variants
    from gpucost_mlflow.core.money.catalog import load_catalog
    from gpucost_mlflow.report import render
    from gpucost_mlflow.report.build import build

    protocol = _protocol(tmp_path, "audit: {sample: 8, min_label_agreement: 0.5}")
    for variant in ("batch8", "batch4"):  # the reference, whose passes size the audit, and the delivering variant
        assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol, variant).exit_code == 0
    corpora = _corpora(corpus_dir, tmp_path / "labelled")
    unlabelled = tmp_path / "corpora"
    unlabelled.mkdir()
    for path in sorted(corpora.glob("*.jsonl")):  # production corpora: no gold labels, so each is audited
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        (unlabelled / path.name).write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows))

    last, _, nested = _delivered("batch4", unlabelled, model_dir, protocol)
    assert last.endswith(": 3 corpora in 1 child, 3 accepted")
    audits = [json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="verdict.json",
                                                                   dst_path=str(tmp_path / run.info.run_id))
                               ).read_text())["audit"] for run in nested]
    assert [(a["variant"], len(a["sample_ids"])) for a in audits] == [("batch8", 8)] * 3
    started = [a for a in audits if LOAD_S in a["stages"]]  # each audit a child of its own, loading the reference
    assert len(started) == 3

    built, _ = build(evidence_of("t"), load_protocol(protocol), protocol, load_catalog(CATALOG), load_variants(VARIANTS))
    batch8, batch4 = (next(a for a in built.assessments if a.configuration.variant == v) for v in ("batch8", "batch4"))
    f, reference = batch4.forecast, batch8.configuration
    assert f.audits(3) == len(started) == 3
    each = (_startup_s(reference) + 8 * reference.durations.median / 30) / 3600
    assert f.audit_h == pytest.approx(3 * each)
    assert "deliverables audit (3 x batch8's own child per delivered corpus" in f.terms()
    assert "(batch8's measured passes)" in f.terms() and "deliverables audit" in render.markdown(built)


def _startup_s(config) -> float:
    """What a fresh child of the configuration pays before its first corpus: its median load, warm-up and the setup
    of each new input shape (its first lap over its steady one, issue 62)."""
    return sum(config.medians.get(key, 0.0) for key in (LOAD_S, WARMUP_S, SHAPE_SETUP_S))
