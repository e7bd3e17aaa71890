"""Quality figures (hand-checked) and the id checks on a written predictions file (PROTOCOL §3, §5)."""

from __future__ import annotations

import gzip
import json

import pytest

from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging import judge, quality, verdicts
from tests.helpers import VARIANTS

pytestmark = pytest.mark.unit

LABELS = ["fresh", "plot", "rotten"]


def test_macro_f1_matches_a_hand_computed_case():
    gold = ["fresh", "fresh", "rotten", "rotten", "plot"]
    guess = ["fresh", "rotten", "rotten", "rotten", "fresh"]
    # fresh: P 1/2 R 1/2 F1 .5; rotten: P 2/3 R 1 F1 .8; plot: 0 -> mean 1.3/3
    assert quality.macro_f1(gold, guess, LABELS) == pytest.approx(1.3 / 3)
    assert quality.accuracy(gold, guess) == pytest.approx(0.6)


def test_evaluate_reports_overall_per_bucket_and_per_class():
    rows = [
        {"id": "a", "label": "fresh", "bucket": "short"},
        {"id": "b", "label": "rotten", "bucket": "short"},
        {"id": "c", "label": "plot", "bucket": "long"},
    ]
    metrics = quality.evaluate(rows, {"a": "fresh", "b": "fresh", "c": "plot"}, LABELS)
    assert metrics["accuracy"] == pytest.approx(2 / 3)
    assert metrics["bucket_long_accuracy"] == 1.0 and metrics["bucket_short_accuracy"] == 0.5
    assert metrics["class_rotten_recall"] == 0.0 and metrics["class_plot_f1"] == 1.0


def test_majority_baseline_predicts_the_most_frequent_training_label():
    base = quality.majority_baseline(["a", "a", "b"], ["a", "b"], ["a", "b"])
    assert base["label"] == "a" and base["accuracy"] == 0.5


def _write(path, records):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")


def test_duplicate_and_missing_ids_are_found_in_the_file(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    _write(path, [{"id": "a", "label": "fresh", "score": 0.9}, {"id": "a", "label": "fresh", "score": 0.9}])
    back = verdicts.read_predictions(path, LABELS)
    checks, counts = verdicts.basic_checks(["a", "b"], back)
    assert counts["expected_ids"] == 2 and counts["observed_ids"] == 2
    assert counts["duplicates"] == ["a"] and counts["missing"] == ["b"]
    assert judge.settle(True, "", checks, "")[0] == "rejected"
    assert [c.name for c in checks if not c.passed] == ["ids", "coverage"]


def test_malformed_prediction_lines_fail_the_format_check(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    _write(path, [{"id": "a", "label": "fresh", "score": 0.9}, "not json", {"id": "b", "label": "meh", "score": 1}])
    checks, _ = verdicts.basic_checks(["a"], verdicts.read_predictions(path, LABELS))
    assert checks[0].name == "format" and not checks[0].passed and "2 malformed" in checks[0].reason


def test_exact_ids_are_accepted(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    _write(path, [{"id": i, "label": "plot", "score": 0.5} for i in ("a", "b")])
    checks, _ = verdicts.basic_checks(["b", "a"], verdicts.read_predictions(path, LABELS))
    assert judge.settle(True, "", checks, "")[0] == "accepted"


def test_missing_predictions_file_is_a_format_failure(tmp_path):
    checks, counts = verdicts.basic_checks(["a"], verdicts.read_predictions(tmp_path / "none.gz", LABELS))
    assert counts["observed_ids"] == 0 and judge.settle(True, "", checks, "")[0] == "rejected"


def test_a_max_length_32_variant_is_judged_against_the_full_length_reference():
    """Truncating at 32 tokens changes the work: never judged on the absolute bars alone (PROTOCOL.md §2)."""
    full = load_variants(VARIANTS)["batch8"].settings
    assert full.max_length == 256
    assert verdicts.needs_reference(full.changed(max_length=32), full)
    assert verdicts.judged_against_reference("passed: ids, format, coverage, quality, reference_agreement")
    assert not verdicts.judged_against_reference("passed: ids, format, coverage, quality, buckets")
