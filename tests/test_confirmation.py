"""The confirmation run (issue 39, item 6): the chosen configuration run on a disjoint corpus for the protocol's
confirmation.min_s; the report says confirmed or not confirmed with the figures, and a choice that did not hold
commits nothing. Known answers: docs/costs.md, "Confirmation"."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.confirmation import (
    CONFIRMED,
    NOT_CONFIRMED,
    NOT_YET,
    ConfirmationRun,
    confirm,
)

H = 3600.0
DURATIONS = (10.0, 10.5, 11.0, 11.5, 12.0)  # one corpus of 1,000 inputs: 83.3-100.0 inputs/s


def _run(status=Status.ACCEPTED, pass_s=11.0, measured_s=660.0, reason="every check passed"):
    return ConfirmationRun("r1", status, reason, 2000, pass_s and pass_s * 2, measured_s)


@pytest.mark.unit
def test_a_rate_within_or_above_the_measured_spread_with_quality_held_is_confirmed():
    found = confirm(DURATIONS, 1000, [_run(pass_s=11.0)], 600)
    assert found.verdict == CONFIRMED
    assert found.figures == ("90.9 inputs/s over 660 s on 2,000 confirmation inputs (benchmark passes 83.3-100.0 "
                             "inputs/s); quality held")
    assert confirm(DURATIONS, 1000, [_run(pass_s=9.0)], 600).verdict == CONFIRMED  # faster: the plan still covers it


@pytest.mark.unit
@pytest.mark.parametrize("run, says", [
    (_run(pass_s=13.0), ("76.9 inputs/s over 660 s on 2,000 confirmation inputs, below the slowest benchmark pass "
                         "(benchmark passes 83.3-100.0 inputs/s); quality held")),
    (_run(status=Status.REJECTED, reason="macro_f1 0.61 < 0.80"), "quality did not hold: rejected (macro_f1 0.61 < 0.80)"),
    (_run(status=Status.FAILED, pass_s=None, reason="out of memory"), "quality did not hold: failed (out of memory)"),
])
def test_a_slowed_or_rejected_confirmation_run_is_not_confirmed(run, says):
    found = confirm(DURATIONS, 1000, [run], 600)
    assert (found.verdict, found.figures) == (NOT_CONFIRMED, says)


@pytest.mark.unit
def test_without_a_long_enough_run_the_choice_is_not_yet_confirmed():
    assert confirm(DURATIONS, 1000, [], 600).verdict == NOT_YET
    # an accepted run shorter than min_s gave the reference's outputs for another configuration: not a confirmation
    assert confirm(DURATIONS, 1000, [_run(measured_s=20.0)], 600).verdict == NOT_YET
    pending = confirm(DURATIONS, 1000, [_run(status=Status.PENDING, reason="no reference pass yet")], 600)
    assert (pending.verdict, pending.figures) == (NOT_YET, "its confirmation run is pending (no reference pass yet)")


@pytest.mark.unit
def test_confirm_marks_a_slowed_configuration_not_confirmed_and_the_decision_then_commits_nothing(experiment, tmp_path):
    from gpucost_mlflow.report import card, standing
    from tests.scenario import RTX, lock_to, report
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="confirmation: {min_s: 600}\n")
    lock_to(protocol)
    for hours in (14.8, 14.85, 14.9, 14.95, 15.0):
        experiment("batch4", RTX, hours * H)
    before, _ = report(protocol_path=protocol)
    assert before.decision.startswith(f"Decision: batch4 on {RTX}")
    run_line = dict(card.lines(before))["Run"]
    assert run_line.endswith("; not yet confirmed: no confirmation run yet (`gpucost confirm --experiment scenario "
                             f"--protocol {protocol} --catalog {before.catalog.split('(')[1].rstrip(')')}`)")

    confirming = {"role": "confirmation", "fingerprint": "c" * 64}
    experiment("batch4", RTX, 16.0 * H, metrics_extra={"measured_total_s": 16.0 * H}, **confirming)
    after, _ = report(protocol_path=protocol)
    assert after.decision.startswith("No decision: the choice did not hold on the confirmation run (batch4 on "
                                     f"{RTX}: 0.0174 inputs/s over 57,600 s on 1,000 confirmation inputs, below the slowest "
                                     "benchmark pass")
    lines = dict(card.lines(after))
    assert lines["No decision"] == "the choice did not hold on the confirmation run"
    assert lines["Confirmation"].startswith(f"batch4 on {RTX} not confirmed: 0.0174 inputs/s over 57,600 s")
    assert [standing.role(a, after.choice) for a in after.assessments] == [standing.NOT_CONFIRMED]

    experiment("batch4", RTX, 14.9 * H, metrics_extra={"measured_total_s": 14.9 * H}, **confirming)
    held, _ = report(protocol_path=protocol)  # the latest confirmation run is read
    assert held.decision.startswith(f"Decision: batch4 on {RTX}")
    assert ("; confirmed: 0.0186 inputs/s over 53,640 s on 1,000 confirmation inputs (benchmark passes 0.0185-0.0188 "
            "inputs/s); quality held") in dict(card.lines(held))["Run"]
    # confirmation passes are not benchmark passes: the durations the decision reads are the five
    assert len(held.assessments[0].configuration.durations.values) == 5


@pytest.mark.unit
@pytest.mark.parametrize("append, says", [
    ("confirmation: {min_s: 0}\n", "field 'confirmation.min_s' must be a number of seconds above 0, got 0"),
    ("confirmation: 600\n", "field 'confirmation' must be a mapping with min_s (seconds) and optionally file"),
    ("confirmation: {min_secs: 60}\n", "unknown field 'confirmation.min_secs'"),
])
def test_a_bad_confirmation_field_is_refused_in_one_line(tmp_path, append, says):
    from gpucost_mlflow.core.errors import GpucostError
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from tests.test_report import protocol_like_shipped

    with pytest.raises(GpucostError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load_protocol(protocol_like_shipped(tmp_path, append=append))


@pytest.mark.unit
def test_the_confirmation_defaults_to_600_s_beside_the_comparison_corpus(tmp_path):
    from pathlib import Path

    from gpucost_mlflow.core.errors import GpucostError
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.flow.confirm import corpus_of
    from tests.helpers import SHIPPED_PROTOCOL

    shipped = load_protocol(SHIPPED_PROTOCOL)
    assert shipped.confirmation == ("", 600.0)
    with pytest.raises(GpucostError, match=r"data/corpus/confirmation.jsonl: the confirmation corpus is missing; "
                                           r"`gpucost corpus build --out .*data/corpus` writes it"):
        corpus_of(tmp_path, shipped)
    (tmp_path / "data/corpus").mkdir(parents=True)
    (tmp_path / "data/corpus/confirmation.jsonl").write_text("")
    assert corpus_of(tmp_path, shipped) == tmp_path / Path("data/corpus/confirmation.jsonl")
