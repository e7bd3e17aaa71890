"""Quality as honest as time (issue 51, item 1, label agreement): a share is judged against its bar by its exact
(Clopper-Pearson) interval at the protocol's confidence; passed, failed or not shown, and a configuration whose
quality was not shown is never chosen, its standing and the note saying how many inputs would show it."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from gpucost_mlflow.core.judging import judge, verdicts
from gpucost_mlflow.core.judging.bounds import FAILED, NOT_SHOWN, PASSED, inputs_needed, share_bound
from gpucost_mlflow.core.judging.verdicts import Check

pytestmark = pytest.mark.unit

LABELS = {f"{i:03d}": "fresh" for i in range(500)}


def agreeing(hits: int) -> dict[str, str]:
    """The variant's labels: the reference's on the first `hits` inputs, another label on the rest."""
    return {ident: ("fresh" if n < hits else "rotten") for n, ident in enumerate(LABELS)}


def test_the_interval_is_scipys_exact_clopper_pearson_at_the_protocols_confidence():
    bound = share_bound(99, 100, 0.97, 0.95)
    found = binomtest(99, 100).proportion_ci(confidence_level=0.95, method="exact")
    assert (bound.low, bound.high) == (found.low, found.high)
    assert bound.low == pytest.approx(0.9455, abs=1e-4) and bound.outcome == NOT_SHOWN  # passes a point bar, not this
    assert share_bound(99, 100, 0.97, 0.90).low > bound.low  # a lower confidence, a narrower interval


@pytest.mark.parametrize("hits, outcome, words", [
    (499, PASSED, "99.80 % of 500 (95 % interval 98.89-99.99 %; bar 97.00 %)"),
    (470, FAILED, "94.00 % of 500 (95 % interval 91.55-95.92 %; bar 97.00 %)"),
    (490, NOT_SHOWN, ("98.00 % of 500 (95 % interval 96.35-99.04 %; bar 97.00 %): quality not shown on 500 inputs: "
                      "about 1,230 needed at this rate")),
    (485, NOT_SHOWN, ("97.00 % of 500 (95 % interval 95.10-98.31 %; bar 97.00 %): quality not shown on 500 inputs: "
                      "no corpus shows it at this rate (it is not above the bar)")),
])
def test_agreement_against_a_097_bar_passes_fails_or_is_not_shown_with_the_inputs_needed(hits, outcome, words):
    check, bound = verdicts.agreement_check(agreeing(hits), LABELS, 0.97, 0.95, "r")
    assert bound.outcome == outcome and check.reason == f"labels agree with reference run r: {words}"
    assert check.passed == (outcome == PASSED) and check.shown == (outcome != NOT_SHOWN)


def test_the_inputs_needed_are_the_fewest_whose_lower_bound_reaches_the_bar_at_the_observed_rate():
    needed = inputs_needed(0.98, 0.97, 0.95)
    assert needed == 1225
    assert share_bound(int(0.98 * needed), needed, 0.97, 0.95).outcome == PASSED
    assert share_bound(int(0.98 * (needed - 1)), needed - 1, 0.97, 0.95).outcome == NOT_SHOWN
    assert inputs_needed(1.0, 0.97, 0.95) == 122 and inputs_needed(0.97, 0.97, 0.95) is None


def test_the_inputs_needed_are_said_to_three_significant_figures_rounded_up_and_recorded_exactly():
    bound = share_bound(490, 500, 0.97, 0.95)  # 1,225 needed: an estimate at an observed rate, said "about 1,230"
    assert bound.words().endswith("about 1,230 needed at this rate") and bound.record()["inputs_needed"] == 1225


def test_a_bar_not_shown_rejects_the_pass_with_its_own_verdict_never_failed():
    checks = [Check("ids", True, "exactly the expected ids"),
              Check("reference_agreement", False, "... quality not shown on 500 inputs: about 1,230 needed", False)]
    status, reason, quality = judge.settle(True, "", checks, "")
    assert (status, quality) == ("rejected", "not shown: reference_agreement")
    assert reason.startswith("reference_agreement: ... quality not shown on 500 inputs")
    assert verdicts.summary(checks) == "not shown: reference_agreement · passed: ids"
    assert verdicts.from_records([c.record() for c in checks]) == checks
    assert "shown" not in checks[0].record()  # verdict.json as before for a check that was shown


def test_a_configuration_whose_quality_was_not_shown_is_never_chosen_and_its_standing_says_what_would_show_it(
        experiment):
    from gpucost_mlflow.report import plots, sections
    from tests.scenario import B200, report

    unshown = ("reference_agreement: labels agree with reference run r: 98.00 % of 500 (95 % interval 96.35-99.04 %; "
               "bar 97.00 %): quality not shown on 500 inputs: about 1,230 needed at this rate")
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds)
        experiment("batch8-bf16", B200, seconds / 2, status="rejected", quality="not shown: reference_agreement",
                   reason=unshown)
    built, _ = report()
    bf16 = next(a for a in built.assessments if a.configuration.variant == "batch8-bf16")
    assert not bf16.feasible
    assert bf16.feasibility == ("quality not shown on 500 inputs: about 1,230 needed at this rate (reference_agreement)")
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200")
    assert ("Quality not shown, not chosen: batch8-bf16 on NVIDIA B200, quality not shown on 500 inputs: about 1,230 "
            "needed at this rate (reference_agreement); its passes so far would make it the choice") in built.decision
    assert "`gpucost corpus build --size 1230`" in built.decision  # the comparison corpus that would show it
    table = sections.decision_table(built)
    said = next(row for row in table.rows if row[0] == "batch8-bf16 on NVIDIA B200")[1]
    assert said.startswith("quality not shown [")  # its footnote: the inputs that would show the bar
    assert table.notes[int(said[-2]) - 1] == "on 500 inputs: about 1,230 needed at this rate (reference_agreement)"
    assert set(plots.for_report(built.summaries, built.decided)) == {"cost_volume", "durations",
                                                                                       "memory"}  # drawn, no error


def test_every_standing_word_has_its_style_in_the_figures():
    from gpucost_mlflow.report import plots, standing

    assert set(standing.WORDS) <= set(plots.STYLES)  # a word without one would fail the figures (a KeyError)
