"""Start-up as the deliverables really run (issue 39, item 5): `gpucost deliver --corpora DIR` processes many corpora in
one child each `deliverables.per_child` of them, one run per corpus under a delivery run, and the forecast counts one
load and warm-up per child, as the delivery ran them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.names import LOAD_S, WARMUP_S
from gpucost_mlflow.tracking import schema
from tests.helpers import PROTOCOL_TEMPLATE, VARIANTS, cli_runner, run_pass

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
    from gpucost_mlflow.report.tables import configurations
    from gpucost_mlflow.tracking.reader import attempts

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

    table, _ = attempts("t")
    delivered = table[table["role"] == "deliverable"]
    assert list(delivered["status"]) == [Status.ACCEPTED] * 3
    (config,) = configurations(table, declared.corpus_size)
    assert config.accepted_deliverables == 3
    f = forecast(declared.plan, 3, config.durations, config.medians, config.attempt_spans,
                 delivery=Delivery(per_child=declared.deliverables["per_child"]))
    assert f.children(3) == delivery.data.metrics["delivery_children"] == len(loaded)
    assert f.startup_h == pytest.approx(2 * (config.medians[LOAD_S] + config.medians[WARMUP_S]) / 3600)
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
