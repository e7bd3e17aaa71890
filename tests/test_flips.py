"""Answers that changed against the reference, by direction (issue 51, item 2): where gold labels exist, the inputs
right in the reference and wrong in the variant (lost) and the reverse (gained), with the exact McNemar p-value, in
verdict.json, the pass's metrics and the report's per-configuration table; a variant that loses correct answers
while its macro-F1 holds is visible."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy.stats import binomtest

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.judging import flips, judge
from gpucost_mlflow.core.judging.verdicts import ReadBack
from gpucost_mlflow.core.names import FLIPS_GAINED, FLIPS_LOST, FLIPS_P
from gpucost_mlflow.report.versus_reference import agreement_text, flips_text, said
from tests.helpers import LABELS, SHIPPED_PROTOCOL

pytestmark = pytest.mark.unit


def test_the_mcnemar_p_value_is_scipys_exact_binomial_test_on_the_discordant_pairs():
    # 12 right in the reference only, 3 right in the variant only: two-sided, 15 discordant pairs at one half.
    table = flips.Flips(lost=12, gained=3, inputs=500)
    assert table.p_value == pytest.approx(binomtest(12, 15, 0.5, alternative="two-sided").pvalue)
    assert table.p_value == pytest.approx(0.03515625)  # 2 x P(X <= 3), X ~ Binomial(15, 1/2) = 2 x 576 / 32768
    assert table.line() == "12 lost, 3 gained of 500 inputs (exact McNemar p = 0.0352)"
    assert flips.Flips(0, 0, 500).p_value is None
    assert flips.Flips(0, 0, 500).line() == "no correct answer changed of 500 inputs"


def test_flips_count_each_input_once_by_direction():
    ids = ["a", "b", "c", "d", "e"]
    found = flips.count(ids, variant_correct={"a", "b", "e"}, reference_correct={"a", "c", "d"})
    assert (found.lost, found.gained, found.inputs) == (2, 2, 5)  # c, d lost; b, e gained; a right in both
    assert flips.correct_ids({"a": "fresh", "b": "rotten"}, {"a": "fresh", "b": "plot"}) == ["a"]


def _rows(n: int) -> list[dict]:
    return [{"id": f"{i:03d}", "label": LABELS[i % 3], "bucket": "short"} for i in range(n)]


def test_a_variant_that_loses_correct_answers_while_its_f1_holds_is_counted_against_the_reference():
    rows = _rows(30)
    gold = {row["id"]: row["label"] for row in rows}
    reference = dict(gold)  # the reference gets every input right
    variant = dict(gold)
    for ident in ("000", "001", "002"):  # three answers lost, one per class: its macro-F1 barely moves
        variant[ident] = LABELS[(LABELS.index(gold[ident]) + 1) % 3]
    protocol = load_protocol(SHIPPED_PROTOCOL)
    judged = judge.judge(judge.Judging(
        completed=True, failure_reason="", rows=rows, back=ReadBack(sorted(variant), variant), protocol=protocol,
        labels=LABELS, needs_reference=True, reference=judge.Reference("r" * 32, {"macro_f1": 1.0}, reference),
        reference_name="batch8"))
    assert judged.comparison["flips"] == {"lost": 3, "gained": 0, "inputs": 30, "mcnemar_p": 0.25}
    assert judged.quality[FLIPS_LOST] == 3 and judged.quality[FLIPS_GAINED] == 0 and judged.quality[FLIPS_P] == 0.25
    assert judged.quality["label_agreement"] == 0.9  # 27 of 30, and its exact interval beside it
    assert judged.quality["label_agreement_low"] == pytest.approx(0.7347, abs=1e-4)
    assert len(judged.correct) == 27  # what verdict.json keeps, so a re-judge counts flips without the corpus


def test_a_rejudged_pass_counts_its_flips_from_both_verdicts_and_an_old_verdict_counts_none():
    variant = {"correct_ids": ["a", "b"], "ids": {"expected_ids": 4}}
    reference = {"correct_ids": ["a", "c", "d"], "ids": {"expected_ids": 4}}
    assert flips.from_verdicts(variant, reference) == flips.Flips(lost=2, gained=1, inputs=4)
    assert flips.from_verdicts({"ids": {"expected_ids": 4}}, reference) is None  # recorded before flips were counted


def test_the_report_says_per_configuration_how_many_answers_changed_and_in_which_direction():
    rows = pd.DataFrame({"status": ["accepted"] * 3 + ["rejected"], FLIPS_LOST: [12.0, 12.0, 12.0, 40.0],
                         FLIPS_GAINED: [3.0, 3.0, 3.0, 0.0], "expected_ids": [500] * 4})
    assert flips_text(rows) == "12 lost, 3 gained of 500 inputs (exact McNemar p = 0.0352)"
    rows.loc[1, FLIPS_LOST] = 11.0  # passes that changed different answers: the range, never one figure
    assert flips_text(rows) == "11-12 lost, 3-3 gained over 3 passes (the passes changed different answers)"
    assert flips_text(pd.DataFrame({"status": ["accepted"], "expected_ids": [500]})) == ""


def test_the_report_says_each_accepted_configurations_agreement_with_its_exact_interval():
    rows = pd.DataFrame({"status": ["accepted", "accepted"], "label_agreement": [0.986, 0.986],
                         "label_agreement_low": [0.9714, 0.9714], "label_agreement_high": [0.9944, 0.9944]})
    assert agreement_text(rows) == "agreement 98.60 % (exact interval 97.14-99.44 %)"
    assert agreement_text(pd.DataFrame({"status": ["accepted"]})) == ""


def test_a_rejected_configuration_shows_its_agreement_interval_bar_and_flips_never_empty():
    # The demo's batch8-int8 (issue 66): rejected on 94.0 % agreement against a 97 % bar; its row says so, with the
    # answers it changed, rather than "empty: not compared".
    rows = pd.DataFrame({"status": ["rejected", "rejected"], "label_agreement": [0.94, 0.94],
                         "label_agreement_low": [0.91545, 0.91545], "label_agreement_high": [0.95916, 0.95916],
                         FLIPS_LOST: [19.0, 19.0], FLIPS_GAINED: [11.0, 11.0], "expected_ids": [500, 500]})
    assert said(rows, 0.97) == ("rejected: agreement 94.00 % (exact interval 91.55-95.92 %; bar 97.00 %); 19 lost, "
                                "11 gained of 500 inputs (exact McNemar p = 0.2)")
    rows.loc[0, "status"] = "accepted"  # an accepted pass's evidence is what the row shows, as before
    assert said(rows, 0.97).startswith("agreement 94.00 % (exact interval 91.55-95.92 %); 19 lost")
    assert said(pd.DataFrame({"status": ["rejected"], "expected_ids": [500]}), 0.97) == ""
