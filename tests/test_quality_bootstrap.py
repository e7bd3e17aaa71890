"""Quality as honest as time (issue 51, item 1, metric bars): the main metric against its absolute bars and its
difference with the reference, on the whole corpus and in each length bucket, judged by a bootstrap interval over
inputs drawn with the protocol's declared seed and resample count: passed, failed or not shown."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import bootstrap as scipy_bootstrap

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.acceptance import Acceptance, Resampling
from gpucost_mlflow.core.inputs.method_fields import resampling
from gpucost_mlflow.core.judging import bootstrap, verdicts
from gpucost_mlflow.core.judging.bootstrap import Scored
from gpucost_mlflow.core.judging.bounds import FAILED, NOT_SHOWN, PASSED
from gpucost_mlflow.core.judging.quality import evaluate, macro_f1
from gpucost_mlflow.workloads.classification import output as labels_output

pytestmark = pytest.mark.unit

LABELS = ("fresh", "plot", "rotten")
SEEDED = Resampling(resamples=1000, seed=7)


def corpus(size: int, long: int = 0) -> list[dict]:
    """`size` inputs with the three labels in turn, the last `long` of them in the long bucket."""
    return [{"id": f"{i:04d}", "label": LABELS[i % 3], "bucket": "long" if i >= size - long else "short"}
            for i in range(size)]


def answering(rows: list[dict], wrong: int, every: int = 1) -> dict[str, str]:
    """Labels right on every input but `wrong` of them (every `every`-th from the first), which get the next label."""
    found, missed = {}, 0
    for n, row in enumerate(rows):
        miss = missed < wrong and n % every == 0
        missed += miss
        found[row["id"]] = LABELS[(LABELS.index(row["label"]) + miss) % 3]
    return found


def acceptance(**changes) -> Acceptance:
    base = Acceptance(coverage=1.0, main_metric="accuracy", threshold=0.8, per_bucket_threshold=0.6,
                      reference_variant="batch8", max_metric_difference=0.02, min_label_agreement=0.5,
                      resampling=SEEDED)
    return replace(base, **changes)


def test_a_seeded_bootstrap_interval_is_reproduced_exactly():
    rows = corpus(300)
    scored, labels = Scored.from_rows(rows), answering(rows, 60, every=3)
    first = bootstrap.absolute_bounds(scored, labels, "macro_f1", 0.8, 0.6, 0.95, SEEDED)
    again = bootstrap.absolute_bounds(scored, labels, "macro_f1", 0.8, 0.6, 0.95, SEEDED)
    assert [(b.low, b.high) for b in first] == [(b.low, b.high) for b in again]
    gold = np.array([LABELS.index(row["label"]) for row in rows])
    guess = np.array([LABELS.index(labels[row["id"]]) for row in rows])
    direct = scipy_bootstrap((gold, guess), lambda g, p, axis=-1: (g == p).mean(axis=axis), paired=True,
                             vectorized=True, n_resamples=1000, batch=bootstrap.BATCH, method="percentile",
                             confidence_level=0.95, rng=np.random.default_rng(7))
    accuracy = bootstrap.absolute_bounds(scored, labels, "accuracy", 0.8, 0.6, 0.95, SEEDED)[0]
    assert (accuracy.low, accuracy.high) == (direct.confidence_interval.low, direct.confidence_interval.high)
    other = bootstrap.absolute_bounds(scored, labels, "accuracy", 0.8, 0.6, 0.95, Resampling(1000, seed=8))[0]
    assert (other.low, other.high) != (accuracy.low, accuracy.high)  # the seed is what draws them


def test_the_resampled_macro_f1_is_the_reports_macro_f1():
    rng = random.Random(3)
    rows = [{"id": str(i), "label": rng.choice(LABELS[:2]), "bucket": "short"} for i in range(200)]
    labels = {row["id"]: rng.choice(LABELS) for row in rows}  # 'rotten' predicted, never gold: only ever wrong
    bound = bootstrap.absolute_bounds(Scored.from_rows(rows), labels, "macro_f1", 0.5, 0.5, 0.95, SEEDED)[0]
    assert bound.value == pytest.approx(macro_f1([r["label"] for r in rows], [labels[r["id"]] for r in rows], LABELS))
    assert bound.value == pytest.approx(evaluate(rows, labels, LABELS)["macro_f1"])


@pytest.mark.parametrize("size, wrong, outcome", [
    (500, 10, PASSED),  # accuracy 0.98, its interval well above 0.8
    (500, 250, FAILED),  # 0.50, its interval well below
    (40, 6, NOT_SHOWN),  # 0.85 on 40 inputs: the interval straddles 0.8
])
def test_an_absolute_bar_passes_fails_or_is_not_shown(size, wrong, outcome):
    rows = corpus(size)
    checks = verdicts.quality_checks({"accuracy": 1.0 - wrong / size}, acceptance(), Scored.from_rows(rows),
                                     answering(rows, wrong, every=max(1, size // wrong)))
    quality = checks[0]
    assert (quality.passed, quality.shown) == (outcome == PASSED, outcome != NOT_SHOWN)
    if outcome == NOT_SHOWN:
        assert "not shown on 40 inputs: about" in quality.reason and "needed at this value" in quality.reason


def test_a_small_bucket_is_not_shown_where_the_whole_corpus_passes():
    rows = corpus(500, long=30)
    labels = {**answering(rows[:470], 40, every=10), **answering(rows[470:], 5, every=6)}  # 0.91 overall, 25 of 30 long
    quality, buckets = verdicts.quality_checks({"accuracy": 0.91}, acceptance(per_bucket_threshold=0.75),
                                               Scored.from_rows(rows), labels)
    assert quality.shown and not buckets.shown and not buckets.passed
    assert buckets.reason.startswith("bucket_long_accuracy")  # the bucket that decided it, not the passed one


def reference_check(rows, labels, reference, **changes):
    checks, comparison = verdicts.reference_checks({}, labels, {"accuracy": 1.0}, reference, acceptance(**changes),
                                                   "ref", Scored.from_rows(rows))
    return checks[1], comparison


def test_the_same_answers_as_the_reference_differ_by_exactly_nothing():
    rows = corpus(200, long=50)
    labels = answering(rows, 20, every=7)
    check, comparison = reference_check(rows, labels, dict(labels))
    assert check.passed and all((b["low"], b["high"]) == (0.0, 0.0) for b in comparison["metric_bounds"])
    assert comparison["bootstrap"] == {"resamples": 1000, "seed": 7, "method": "percentile"}


def test_a_paired_difference_is_narrower_than_the_metrics_own_intervals():
    """Paired: the same inputs drawn for both passes, so only the answers that changed move the difference."""
    rows = corpus(500)
    reference = answering(rows, 100, every=5)
    labels = dict(reference)
    labels[rows[1]["id"]] = "plot" if rows[1]["label"] != "plot" else "rotten"  # one more wrong answer
    check, comparison = reference_check(rows, labels, reference)
    whole = comparison["metric_bounds"][0]
    assert check.passed and whole["high"] <= 0.0 and whole["low"] >= -0.01
    own = bootstrap.absolute_bounds(Scored.from_rows(rows), labels, "accuracy", 0.8, 0.6, 0.95, SEEDED)[0]
    assert own.high - own.low > 5 * (whole["high"] - whole["low"])


def test_a_variant_losing_many_answers_fails_and_a_few_on_few_inputs_is_not_shown():
    rows = corpus(500)
    reference = {row["id"]: row["label"] for row in rows}
    failed, _ = reference_check(rows, answering(rows, 100, every=5), reference)
    assert not failed.passed and failed.shown
    small = corpus(60)
    unshown, _ = reference_check(small, answering(small, 1), {row["id"]: row["label"] for row in small})
    assert not unshown.passed and not unshown.shown  # -0.017 is inside 0.02, yet 60 inputs cannot show it
    assert "not shown on 60 inputs" in unshown.reason and unshown.reason.endswith("vs reference run ref")


def test_a_pass_judged_again_resamples_the_gold_labels_its_first_verdict_kept():
    rows = corpus(300)
    scored = Scored.from_rows(rows)
    reference = {row["id"]: row["label"] for row in rows}
    back = verdicts.ReadBack(ids=list(reference), labels=answering(rows, 30, every=10))
    ref = labels_output.judge.Reference("ref", {"accuracy": 1.0}, reference)
    first = {"scored": scored.record()}
    again = labels_output.judge_against_reference([], {"accuracy": 0.9}, back, ref, acceptance(), first)
    assert again.comparison["metric_bounds"][0]["value"] == pytest.approx(-0.1)
    old = labels_output.judge_against_reference([], {"accuracy": 0.9}, back, ref, acceptance(), {})
    assert "point estimate: this pass kept no gold labels to resample" in old.reason


def test_the_protocol_declares_the_bootstrap_or_takes_its_default(tmp_path):
    assert resampling(tmp_path, {"acceptance": {}}) == Resampling(2000, 0)
    assert resampling(tmp_path, {"acceptance": {"bootstrap": {"resamples": 5000, "seed": 11}}}) == Resampling(5000, 11)
    with pytest.raises(GpucostError, match="acceptance.bootstrap.resamples' must be a whole number >= 200"):
        resampling(tmp_path, {"acceptance": {"bootstrap": {"resamples": 50}}})
    with pytest.raises(GpucostError, match="acceptance.bootstrap.seed"):
        resampling(tmp_path, {"acceptance": {"bootstrap": {"seed": "x"}}})


def test_a_bucket_not_shown_says_the_corpus_that_would_show_it_in_the_reports_words():
    """The report's standing reads 'quality not shown on N inputs: about M needed' whatever bar was not shown; for a
    bucket, M is a corpus with the same bucket mix, what `gpucost corpus build --size M` would build."""
    import pandas as pd

    from gpucost_mlflow.core import approximate
    from gpucost_mlflow.core.judging import judge
    from gpucost_mlflow.core.money.choice import _needed
    from gpucost_mlflow.report.versus_reference import not_shown

    rows = corpus(500, long=50)
    labels = {**{row["id"]: row["label"] for row in rows[:450]}, **answering(rows[450:], 12, every=4)}  # 38 of 50
    checks = verdicts.quality_checks({"accuracy": 0.976}, acceptance(per_bucket_threshold=0.65), Scored.from_rows(rows),
                                     labels)
    status, reason, verdict = judge.settle(True, "", checks, "")
    assert (status, verdict) == ("rejected", "not shown: buckets")
    said = not_shown(pd.DataFrame({"quality_verdict": [verdict], "reason": [reason]}))[0]
    assert said.startswith(" on 500 inputs (50 in this bucket): about ") and said.endswith("needed at this value (buckets)")
    long = bootstrap.absolute_bounds(Scored.from_rows(rows), labels, "accuracy", 0.8, 0.65, 0.95, SEEDED)[1]
    assert (long.name, long.inputs, long.total) == ("bucket_long_accuracy", 50, 500)
    # the long bucket's need, times ten: its share of the corpus, said to three significant figures rounded up
    assert int(_needed(said)) == approximate.at_least(long.needed) and long.needed > 500
