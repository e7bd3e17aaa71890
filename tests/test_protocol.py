"""Pre-registered acceptance (PROTOCOL §1, §7): protocol loading, the lock, reference verdicts, the attempts table."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.tracking import schema
from tests.helpers import (
    CATALOG,
    SHIPPED_PROTOCOL,
    VARIANTS,
    checks_of,
    cli_runner,
    evidence_of,
    pass_args,
    run_pass,
    write_protocol,
)

REQUIRED_COLUMNS = ["run_id", "campaign_id", "variant", "corpus_fingerprint", "device", "status", "pass_s",
                    "quality_verdict", "expected_ids", "observed_ids", "ids_match", "corpus_accepted",
                    "completed_entries", "notes"]


def attempts_csv(protocol, experiment="t") -> tuple[pd.DataFrame, str]:
    result = cli_runner().invoke(main, ["attempts", "--experiment", experiment, "--format", "csv", "--protocol", str(protocol)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    return pd.read_csv(io.StringIO(text)), result.stderr


@pytest.mark.unit
def test_the_shipped_protocol_loads_and_names_its_reference():
    protocol = load_protocol(SHIPPED_PROTOCOL)
    assert protocol.scenario == "offline" and protocol.passes_per_variant == 5
    assert protocol.acceptance.reference_variant == "batch8" and protocol.acceptance.coverage == 1.0
    assert protocol.buckets == {"short": 600, "medium": 300, "long": 100}


@pytest.mark.unit
def test_deadline_and_plan_may_be_left_out_and_other_costs_are_read_exactly(tmp_path, protocol_file):
    document = yaml.safe_load(protocol_file.read_text())
    document.pop("deadline")
    document.pop("plan", None)
    document["other_costs"] = [{"label": "storage", "amount": "12.5", "currency": "usd", "basis": "30 days of storage"}]
    path = tmp_path / "protocol.yaml"
    path.write_text(yaml.safe_dump(document))
    protocol = load_protocol(path)
    assert protocol.deadline is None and protocol.plan is None
    (cost,) = protocol.other_costs
    assert (cost.label, str(cost.amount), cost.currency) == ("storage", "12.50", "USD")
    result = CliRunner().invoke(main, ["protocol", "show", "--protocol", str(path)])
    assert result.exit_code == 0 and "deadline: no deadline declared" in result.output


@pytest.mark.parametrize("field, edit, message", [
    ("acceptance.threshold", lambda d: d["acceptance"].pop("threshold"), "missing field 'acceptance.threshold'"),
    ("acceptance.threshold", lambda d: d["acceptance"].update(threshold="high"), "field 'acceptance.threshold' must be a"),
    ("acceptance.reference.min_label_agreement", lambda d: d["acceptance"]["reference"].update(min_label_agreement=1.5), "must be between 0 and 1"),
    ("scenario", lambda d: d.update(scenario="interactive"), "field 'scenario' must be one of offline"),
    ("deadline", lambda d: d.update(deadline="friday"), "field 'deadline' must be an ISO date-time"),
    ("passes_per_variant", lambda d: d.update(passes_per_variant=0), "field 'passes_per_variant' must be a positive"),
    ("other_costs[1].amount", lambda d: d.update(other_costs=[{"label": "storage", "amount": -1, "currency": "USD", "basis": "b"}]),
     ".amount' must be a number >= 0"),
    ("other_costs[1].basis", lambda d: d.update(other_costs=[{"label": "storage", "amount": 3, "currency": "USD"}]),
     ".basis' must be a non-empty text"),
    ("plan.setup_hours", lambda d: d.update(plan={"setup_hours": -2}), "field 'plan.setup_hours' must be a number >= 0"),
])
@pytest.mark.unit
def test_invalid_protocol_is_one_line_error_naming_the_field(tmp_path, protocol_file, field, edit, message):
    document = yaml.safe_load(protocol_file.read_text())
    edit(document)
    broken = tmp_path / "protocol.yaml"
    broken.write_text(yaml.safe_dump(document))
    with pytest.raises(GpucostError, match=message.replace("(", r"\(")):
        load_protocol(broken)
    result = CliRunner().invoke(main, ["protocol", "show", "--protocol", str(broken)])
    assert result.exit_code == 2 and field in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.unit
def test_lock_stores_the_digest_and_a_pass_under_another_protocol_is_refused(store, tmp_path, corpus_dir, model_dir, protocol_file):
    result = CliRunner().invoke(main, ["protocol", "lock", "--experiment", "t", "--protocol", str(protocol_file)])
    assert result.exit_code == 0 and "locked" in result.output
    tags = MlflowClient().get_experiment_by_name("t").tags
    assert tags[schema.PROTOCOL_DIGEST] == load_protocol(protocol_file).digest
    other = write_protocol(tmp_path / "other.yaml", threshold=0.1)
    refused = run_pass(corpus_dir / "comparison.jsonl", model_dir, other)
    assert refused.exit_code == 2 and "a new protocol means a new experiment" in refused.output
    assert not MlflowClient().search_runs([MlflowClient().get_experiment_by_name("t").experiment_id])


@pytest.mark.unit
def test_a_benchmark_pass_on_another_corpus_than_the_protocols_is_refused(store, tmp_path, model_dir, protocol_file):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "comparison.jsonl").write_text('{"id":"a","text":"fine","label":"fresh","bucket":"short"}\n')
    result = run_pass(corpus / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 2 and "not the protocol's corpus" in result.output


@pytest.mark.integration
def test_quality_below_the_preregistered_bar_rejects_the_corpus(store, tmp_path, corpus_dir, model_dir):
    strict = write_protocol(tmp_path / "strict.yaml", threshold=0.99)
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, strict).exit_code == 0
    run = MlflowClient().search_runs([MlflowClient().get_experiment_by_name("t").experiment_id])[0]
    assert run.data.tags[schema.STATUS] == "rejected"
    assert run.data.tags[schema.QUALITY_VERDICT] == "failed: quality"
    assert checks_of(run)["quality"].startswith("fail: macro_f1")
    assert checks_of(run)["ids"].startswith("pass")


@pytest.mark.integration
def test_precision_variant_is_pending_until_a_reference_pass_exists(store, corpus_dir, model_dir, protocol_file):
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "batch8-bf16").exit_code == 0
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "batch8").exit_code == 0
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "batch8-bf16").exit_code == 0
    table, _ = attempts_csv(protocol_file)
    assert list(table["variant"]) == ["batch8-bf16", "batch8", "batch8-bf16"]
    assert table["status"][0] == "pending" and table["quality_verdict"][0] == "pending reference"
    assert not table["corpus_accepted"][0]
    assert table["status"][1] == "accepted"
    assert table["status"][2] in ("accepted", "rejected") and table["quality_verdict"][2] != "pending reference"
    run_id = table["run_id"][2]
    verdict = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="verdict.json")).read_text())
    assert verdict["reference"]["run_id"] == table["run_id"][1]
    assert 0.0 <= verdict["reference"]["label_agreement"] <= 1.0 and "macro_f1" in verdict["reference"]["metric_differences"]
    assert "labels agree with reference run" in checks_of(MlflowClient().get_run(run_id))["reference_agreement"]


@pytest.mark.integration
def test_attempts_csv_opens_in_pandas_with_the_named_columns(store, corpus_dir, model_dir, protocol_file, monkeypatch):
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file).exit_code == 0
    monkeypatch.setenv("GPUCOST_FAULT", "dupid@5")
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file).exit_code == 0
    table, warnings = attempts_csv(protocol_file)
    assert set(REQUIRED_COLUMNS) <= set(table.columns) and len(table) == 2
    dup = table.iloc[1]
    assert not dup["ids_match"] and not dup["corpus_accepted"] and dup["status"] == "rejected"
    assert "duplicate id" in dup["notes"] and "predictions.jsonl.gz" in dup["notes"]
    assert warnings == ""


@pytest.mark.integration
def test_failed_pass_row_has_empty_cells_with_reasons_in_notes(store, corpus_dir, model_dir, protocol_file, monkeypatch):
    monkeypatch.setenv("GPUCOST_FAULT", "oom@3")
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file).exit_code == 1
    table, _ = attempts_csv(protocol_file)
    row = table.iloc[0]
    assert row["status"] == "failed" and pd.isna(row["pass_s"]) and row["completed_entries"] == 16
    assert "pass_s empty: out of memory" in row["notes"]


@pytest.mark.integration
def test_editing_the_protocol_after_passes_exist_is_warned(store, tmp_path, corpus_dir, model_dir):
    protocol = write_protocol(tmp_path / "protocol.yaml")
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol).exit_code == 0
    protocol.write_text(protocol.read_text().replace("threshold: 0.0", "threshold: 0.5", 1))
    _, warnings = attempts_csv(protocol)
    assert "protocol changed after results" in warnings
    markdown = CliRunner().invoke(main, ["attempts", "--experiment", "t", "--format", "markdown", "--protocol", str(protocol)])
    assert "protocol changed after results" in markdown.stdout


@pytest.mark.integration
def test_launcher_killed_mid_pass_is_read_back_as_failed_interrupted(store, corpus_dir, model_dir, protocol_file):
    # The pass sleeps 3 s after its first measured batch, so the kill below lands inside it however fast the child
    # starts (a sleep, not a 3 s clock of repeated work: the other tests get the CPU meanwhile).
    protocol = protocol_file
    bin_dir = Path(sys.executable).parent
    launcher = subprocess.Popen(
        [str(bin_dir / "gpucost"), *pass_args(corpus_dir / "comparison.jsonl", model_dir, protocol, "batch1")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, GPUCOST_FAULT="stall@1:3"),
    )
    client = MlflowClient()
    deadline = time.time() + 120
    while time.time() < deadline:
        experiment = client.get_experiment_by_name("t")
        runs = client.search_runs([experiment.experiment_id]) if experiment else []
        if runs and schema.VARIANT in runs[0].data.tags:
            break
        time.sleep(0.2)
    time.sleep(1.0)
    launcher.send_signal(signal.SIGKILL)
    launcher.wait(timeout=30)
    table, _ = attempts_csv(protocol)
    assert len(table) == 1
    assert table["status"][0] == "failed" and table["reason"][0].startswith("interrupted")


@pytest.mark.integration
def test_rejudge_accepts_a_pending_pass_once_its_reference_exists_and_twice_changes_nothing(store, tmp_path, corpus_dir, model_dir):
    from gpucost_mlflow.core.inputs.variants import load_variants
    from gpucost_mlflow.core.money.catalog import load_catalog
    from gpucost_mlflow.report.build import build

    loose = write_protocol(tmp_path / "loose.yaml", max_diff=1.0, min_agreement=0.0)
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, loose, "batch8-bf16").exit_code == 0
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, loose, "batch8").exit_code == 0
    table, _ = attempts_csv(loose)
    assert list(table["status"]) == ["pending", "accepted"]
    client = MlflowClient()
    pending_id, reference_id = table["run_id"][0], table["run_id"][1]
    metrics_before = client.get_run(pending_id).data.metrics

    result = CliRunner().invoke(main, ["rejudge", "--experiment", "t", "--protocol", str(loose)])
    assert result.exit_code == 0, result.output
    assert f"batch8-bf16 run {pending_id}: pending -> accepted against reference run {reference_id}" in result.output
    table, _ = attempts_csv(loose)
    assert list(table["status"]) == ["accepted", "accepted"] and bool(table["corpus_accepted"][0])
    run = client.get_run(pending_id)
    measured = {key: value for key, value in run.data.metrics.items() if key != "accepted"}
    compared = {key for key in measured if key.startswith(("flips_", "label_agreement"))}  # the comparison's figures
    assert {"flips_lost", "flips_gained", "label_agreement", "label_agreement_low"} <= compared  # added (issue 51)
    assert {k: v for k, v in measured.items() if k not in compared} == {
        key: value for key, value in metrics_before.items() if key != "accepted"}  # raw measurements untouched
    assert metrics_before["accepted"] == 0 and run.data.metrics["accepted"] == 1
    assert f"against reference run {reference_id} (first pending)" in run.data.tags[schema.REJUDGED]
    assert "reference_agreement" in verdicts.outcomes(run.data.tags[schema.CHECKS])
    verdict = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=pending_id, artifact_path=schema.VERDICT,
                                                                  dst_path=str(tmp_path / "v"))).read_text())
    assert verdict["status"] == "accepted" and verdict["first"]["status"] == "pending"
    assert any(c["name"] == "reference_agreement" and "labels agree with reference run" in c["reason"]
               for c in verdict["checks"])
    built, _ = build(evidence_of("t"), load_protocol(loose), loose, load_catalog(CATALOG),
                     load_variants(VARIANTS))
    bf16 = next(a for a in built.assessments if a.configuration.variant == "batch8-bf16")
    assert bf16.feasibility.startswith("under-sampled (1 of 5)")  # judged: only its pass count holds it back now

    again = CliRunner().invoke(main, ["rejudge", "--experiment", "t", "--protocol", str(loose)])
    assert again.exit_code == 0 and "nothing to re-judge" in again.output
    assert client.get_run(pending_id).data.tags == run.data.tags


@pytest.mark.parametrize("args, message", [
    (["--experiment", "no-such-experiment"], "experiment 'no-such-experiment' not found"),
])
@pytest.mark.unit
def test_rejudge_of_an_unknown_experiment_is_one_line_exit_2(store, protocol_file, args, message):
    result = CliRunner().invoke(main, ["rejudge", *args, "--protocol", str(protocol_file)])
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.integration
def test_a_deliverable_without_labels_is_accepted_by_ids_format_coverage_and_audit_and_counted_once(store, tmp_path, corpus_dir, model_dir):
    from gpucost_mlflow.core.inputs.variants import load_variants
    from gpucost_mlflow.core.money.catalog import load_catalog
    from gpucost_mlflow.report.build import build

    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace(
        "deliverables: {expected: 1, description: the slice classified once}",
        "deliverables: {expected: 1, description: the slice classified once, audit: {sample: 8, min_label_agreement: 0.5}}"))
    production = tmp_path / "production.jsonl"
    rows = [json.loads(line) for line in (corpus_dir / "comparison.jsonl").read_text().splitlines()]
    production.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows))

    def deliver():
        return run_pass(production, model_dir, protocol, "batch4", "--role", "deliverable")

    refused = run_pass(production, model_dir, protocol, "batch4")
    assert refused.exit_code == 2 and "missing field 'label'" in refused.output  # a benchmark corpus needs gold labels
    assert run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol, "batch4").exit_code == 0
    for _ in range(2):
        result = deliver()
        assert result.exit_code == 0 and "accepted" in result.output, result.output
    table, _ = attempts_csv(protocol)
    delivered = table[table["role"] == "deliverable"]
    assert list(delivered["status"]) == ["accepted", "accepted"]
    assert set(delivered["quality_verdict"]) == {"no gold labels: audit passed"}
    run = MlflowClient().get_run(delivered["run_id"].iloc[0])
    assert checks_of(run)["audit"].startswith("pass: sampled inputs labelled as batch8 labels them: 100.00 % of 8 (")
    assert "macro_f1" not in run.data.metrics
    verdict = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="verdict.json")).read_text())
    assert verdict["gold_labels"] is False and len(verdict["audit"]["sample_ids"]) == 8 and verdict["audit"]["variant"] == "batch8"
    built, _ = build(evidence_of("t"), load_protocol(protocol), protocol, load_catalog(CATALOG),
                     load_variants(VARIANTS))
    (batch4,) = built.assessments
    assert batch4.configuration.accepted_deliverables == 1  # one corpus, however often it is re-run


@pytest.mark.unit
def test_an_audit_below_its_agreement_fails_and_the_sample_is_fixed_by_the_fingerprint():
    from gpucost_mlflow.core.judging import judge

    ids = [f"id{i}" for i in range(20)]
    sample = judge.audit_sample(ids, 5, "f" * 64)
    assert set(sample) == set(judge.audit_sample(list(reversed(ids)), 5, "f" * 64))  # the draw ignores file order
    assert len(sample) == 5 and sample != judge.audit_sample(ids, 5, "e" * 64)
    mine = {i: "fresh" for i in ids}
    theirs = {i: ("rotten" if n < 3 else "fresh") for n, i in enumerate(sample)}
    check = judge.audit_check(mine, theirs, sample, 0.8, "batch8")  # 2 of 5: its exact interval reaches 85 %
    assert not check.passed and not check.shown
    assert check.reason.startswith("sampled inputs labelled as batch8 labels them: 40.00 % of 5 (95 % interval")
    failed = judge.audit_check(mine, theirs, sample, 0.9, "batch8")
    assert not failed.passed and failed.shown  # its upper bound 85.3 % is below 0.9
    assert judge.audit_check(mine, {i: "fresh" for i in sample}, sample, 0.4, "batch8").passed  # 5 of 5: from 47.8 %


def edited_protocol(tmp_path: Path, protocol_file: Path, edit) -> Path:
    """The test protocol with one edit of its YAML document, written as bad.yaml."""
    document = yaml.safe_load(protocol_file.read_text())
    edit(document)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def shown(path: Path):
    return CliRunner().invoke(main, ["protocol", "show", "--protocol", str(path)])


@pytest.mark.unit
@pytest.mark.parametrize("shipped", sorted((SHIPPED_PROTOCOL.parent).glob("protocol*.yaml")), ids=lambda p: p.name)
def test_every_shipped_protocol_holds_only_known_fields(shipped):
    assert load_protocol(shipped).max_spread_ratio == 1.5
    assert shown(shipped).exit_code == 0


@pytest.mark.unit
def test_a_misspelled_top_level_field_is_refused_naming_the_nearest_known_one(tmp_path, protocol_file):
    def misspell(document):
        document["passes_per_varaint"] = document.pop("passes_per_variant")

    bad = edited_protocol(tmp_path, protocol_file, misspell)
    message = f"{bad}: unknown field 'passes_per_varaint' (did you mean 'passes_per_variant'?)"
    with pytest.raises(GpucostError) as error:
        load_protocol(bad)
    assert str(error.value) == message
    result = shown(bad)
    assert result.exit_code == 2 and result.output.strip().splitlines() == [f"Error: {message}"]


@pytest.mark.unit
def test_a_misspelled_field_is_refused_even_beside_the_right_one(tmp_path, protocol_file):
    bad = edited_protocol(tmp_path, protocol_file, lambda d: d.update(passes_per_varaint=3))
    with pytest.raises(GpucostError, match=r"unknown field 'passes_per_varaint' \(did you mean 'passes_per_variant'\?\)"):
        load_protocol(bad)


@pytest.mark.unit
@pytest.mark.parametrize("edit, field, nearest", [
    (lambda d: d.update(plan={"setup_hour": 4}), "plan.setup_hour", "plan.setup_hours"),
    (lambda d: d["warmup"].update(input=8), "warmup.input", "warmup.inputs"),
    (lambda d: d["corpus"].update(lables=["fresh"]), "corpus.lables", "corpus.labels"),
    (lambda d: d["acceptance"]["reference"].update(min_label_agrement=0.9), "acceptance.reference.min_label_agrement",
     "acceptance.reference.min_label_agreement"),
    (lambda d: d["deliverables"].update(audit={"sampel": 8, "min_label_agreement": 0.5}), "deliverables.audit.sampel",
     "deliverables.audit.sample"),
    (lambda d: d.update(setup_hours=4), "setup_hours", "plan.setup_hours"),
])
def test_a_misspelled_nested_field_is_refused_with_its_dotted_name(tmp_path, protocol_file, edit, field, nearest):
    bad = edited_protocol(tmp_path, protocol_file, edit)
    with pytest.raises(GpucostError) as error:
        load_protocol(bad)
    assert str(error.value) == f"{bad}: unknown field '{field}' (did you mean '{nearest}'?)"
    result = shown(bad)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1 and field in result.output


@pytest.mark.unit
def test_an_unknown_field_like_no_known_one_lists_the_fields_known_where_it_stands(tmp_path, protocol_file):
    bad = edited_protocol(tmp_path, protocol_file, lambda d: d["acceptance"]["reference"].update(zzz=1))
    with pytest.raises(GpucostError, match=r"unknown field 'acceptance.reference.zzz' \(known in acceptance.reference: "
                                           r"variant, max_metric_difference, min_label_agreement"):
        load_protocol(bad)


@pytest.mark.unit
def test_bucket_names_are_the_users_own_and_a_field_of_another_outputs_bar_is_refused(tmp_path, protocol_file):
    renamed = edited_protocol(tmp_path, protocol_file, lambda d: d["corpus"].update(buckets={"tiny": 20, "huge": 10}))
    assert load_protocol(renamed).buckets == {"tiny": 20, "huge": 10}
    bad = edited_protocol(tmp_path, protocol_file, lambda d: d["acceptance"].update(retrieval={"k": 5, "min_recall": 0.5}))
    with pytest.raises(GpucostError, match="field 'acceptance.retrieval' belongs to a protocol whose acceptance.output "
                                           "is embeddings; this protocol's output is labels"):
        load_protocol(bad)


@pytest.mark.unit
def test_max_spread_ratio_is_1_5_when_absent_and_read_when_a_number_above_1(tmp_path, protocol_file):
    absent = edited_protocol(tmp_path, protocol_file, lambda d: d.pop("max_spread_ratio", None))
    assert "max_spread_ratio" not in absent.read_text() and load_protocol(absent).max_spread_ratio == 1.5
    assert load_protocol(edited_protocol(tmp_path, protocol_file, lambda d: d.update(max_spread_ratio=2))).max_spread_ratio == 2.0
    assert load_protocol(edited_protocol(tmp_path, protocol_file, lambda d: d.update(max_spread_ratio=1.25))).max_spread_ratio == 1.25


@pytest.mark.unit
@pytest.mark.parametrize("value", [True, "1.5", 1, 0.8, -2, float("inf"), [1.5]])
def test_a_max_spread_ratio_that_is_not_a_number_above_1_is_one_line_exit_2(tmp_path, protocol_file, value):
    bad = edited_protocol(tmp_path, protocol_file, lambda d: d.update(max_spread_ratio=value))
    with pytest.raises(GpucostError, match=r"field 'max_spread_ratio' must be a number > 1"):
        load_protocol(bad)
    result = shown(bad)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1 and "max_spread_ratio" in result.output


@pytest.mark.unit
def test_protocol_show_prints_the_spread_bound_and_how_deliverables_are_forecast(tmp_path):
    side = tmp_path / "side.yaml"
    side.write_text(SHIPPED_PROTOCOL.read_text().replace("  expected: 1\n", "  expected: 1\n  side_by_side: true\n")
                    + "max_spread_ratio: 1.25\n")
    result = CliRunner().invoke(main, ["protocol", "show", "--protocol", str(side)])
    assert result.exit_code == 0, result.output
    assert "unstable above max/min 1.25" in result.output and "side by side on a lot's idle GPUs" in result.output
    flag = tmp_path / "flag.yaml"
    flag.write_text(side.read_text().replace("side_by_side: true", "side_by_side: two"))
    refused = CliRunner().invoke(main, ["protocol", "show", "--protocol", str(flag)])
    assert refused.exit_code == 2 and "field 'deliverables.side_by_side' must be true or false" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


@pytest.mark.unit
def test_the_separation_confidence_is_0_95_when_absent_and_refused_outside_0_5_to_1(tmp_path, protocol_file):
    assert load_protocol(protocol_file).confidence == 0.95
    assert load_protocol(edited_protocol(tmp_path, protocol_file, lambda d: d.update(confidence=0.9))).confidence == 0.9
    for value in (True, "0.95", 0.5, 1, 1.2):
        bad = edited_protocol(tmp_path, protocol_file, lambda d, v=value: d.update(confidence=v))
        with pytest.raises(GpucostError, match=r"confidence must be a number above 0.5 and below 1"):
            load_protocol(bad)
