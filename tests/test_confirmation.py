"""The confirmation run (issue 39, item 6; issue 52, point 4): the chosen configuration run on a disjoint corpus for
the protocol's confirmation.min_s; the report says confirmed or not confirmed with the figures, every confirmation run
counts (none is retried away), and a choice that did not hold commits nothing. Known answers: docs/costs.md,
"Confirmation"."""

from __future__ import annotations

import json

import pytest

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.confirmation import (
    CONFIRMED,
    EXCLUDED,
    NOT_CONFIRMED,
    NOT_COUNTED,
    NOT_YET,
    ConfirmationRun,
    confirm,
)

H = 3600.0
DURATIONS = (10.0, 10.5, 11.0, 11.5, 12.0)  # one corpus of 1,000 inputs: 83.3-100.0 inputs/s


def _run(status=Status.ACCEPTED, pass_s=11.0, measured_s=660.0, reason="every check passed", run_id="r1",
         repetitions=None):
    return ConfirmationRun(run_id, status, reason, 2000, pass_s and pass_s * 2, measured_s, repetitions)


@pytest.mark.unit
def test_a_rate_within_or_above_the_measured_spread_with_quality_held_is_confirmed():
    found = confirm(DURATIONS, 1000, [_run(pass_s=11.0)], 600)
    assert found.verdict == CONFIRMED
    assert found.figures == ("90.9 inputs/s: 30 repetitions of 2,000 confirmation inputs in 660 s (benchmark steady laps "
                             "83.3-100.0 inputs/s); quality held")
    assert confirm(DURATIONS, 1000, [_run(pass_s=9.0)], 600).verdict == CONFIRMED  # faster: the plan still covers it


@pytest.mark.unit
def test_the_rate_is_read_in_real_tokens_where_both_sides_counted_them():
    """The confirmation corpus holds other texts: 44 tokens an input against the comparison's 40. Its 82.6 inputs/s
    is below the slowest lap's 83.3, yet per token it ran within the spread (3,333-4,000 tokens/s): the plan sized
    on the comparison's mix still covers the work. Per token slower than the slowest lap, it did not hold."""
    def longer(corpus_s):
        return ConfirmationRun("r1", Status.ACCEPTED, "every check passed", 2000, corpus_s, 660.0, tokens=88_000)

    held = confirm(DURATIONS, 1000, [longer(24.2)], 600, tokens_per_pass=40_000)
    assert held.verdict == CONFIRMED
    assert held.figures == ("3,636 tokens/s (82.6 inputs/s): 27 repetitions of 2,000 confirmation inputs in 660 s "
                            "(benchmark steady laps 3,333-4,000 tokens/s); quality held")
    assert held.runs[0].unit == "tokens/s" and held.runs[0].against_slowest == pytest.approx(3636.36 / 3333.33, 1e-4)
    slowed = confirm(DURATIONS, 1000, [longer(27.0)], 600, tokens_per_pass=40_000)
    assert slowed.verdict == NOT_CONFIRMED and slowed.figures.startswith("3,259 tokens/s (74.1 inputs/s): ")
    assert "below the slowest benchmark pass (benchmark steady laps 3,333-4,000 tokens/s)" in slowed.figures
    # without the benchmark passes' tokens (or the run's), inputs per second as before
    assert confirm(DURATIONS, 1000, [longer(24.2)], 600).verdict == NOT_CONFIRMED


@pytest.mark.unit
@pytest.mark.parametrize("run, says", [
    (_run(pass_s=13.0), ("76.9 inputs/s: 25 repetitions of 2,000 confirmation inputs in 660 s, below the slowest "
                         "benchmark pass (benchmark steady laps 83.3-100.0 inputs/s); quality held")),
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
    short = confirm(DURATIONS, 1000, [_run(measured_s=20.0)], 600)
    assert short.verdict == NOT_YET
    assert short.figures == "no confirmation run yet; 1 not counted (each listed under Confirmation)"
    assert short.runs[0].outcome == NOT_COUNTED and "under confirmation.min_s (600 s)" in short.runs[0].figures
    pending = confirm(DURATIONS, 1000, [_run(status=Status.PENDING, reason="no reference pass yet")], 600)
    assert (pending.verdict, pending.figures) == (NOT_YET, "its confirmation run is pending (no reference pass yet)")


@pytest.mark.unit
def test_the_confirmation_line_says_what_was_timed():
    # 21 repetitions of the corpus in 31 s, as the pass recorded them (metric `repetitions`): one corpus 1.476 s
    run = ConfirmationRun("r1", Status.ACCEPTED, "every check passed", 1000, 31.0 / 21, 31.0, 21)
    found = confirm((1.5, 1.55, 1.6, 1.65, 1.7), 1000, [run], 30)
    assert found.figures.startswith("677.4 inputs/s: 21 repetitions of 1,000 confirmation inputs in 31 s (")
    # a run recorded without the count: the clock's span over one corpus's seconds gives it
    assert "1 repetition of 2,000 confirmation inputs in 22 s" in confirm(
        DURATIONS, 1000, [_run(measured_s=22.0)], 20).figures


@pytest.mark.unit
def test_a_not_confirmed_run_is_not_retried_away_by_a_later_one():
    slowed, held = _run(pass_s=13.0, run_id="slow"), _run(pass_s=10.0, run_id="again")
    for runs in ([slowed, held], [held, slowed]):
        found = confirm(DURATIONS, 1000, runs, 600)
        assert found.verdict == NOT_CONFIRMED and found.run_id == "slow"
        assert found.figures.endswith("; 1 of 2 confirmation runs did not hold")
        assert [(r.run_id, r.outcome) for r in found.runs] == [(r.run_id, CONFIRMED if r is held else NOT_CONFIRMED)
                                                                for r in runs]
    # a later pending run does not hide an earlier one that did not hold either
    waiting = _run(status=Status.PENDING, reason="no reference pass yet", run_id="later")
    assert confirm(DURATIONS, 1000, [slowed, waiting], 600).verdict == NOT_CONFIRMED
    # confirmed only when every counted run held: its figures are the slowest one's
    both = confirm(DURATIONS, 1000, [_run(pass_s=9.0, run_id="fast"), _run(pass_s=11.5, run_id="slower")], 600)
    assert (both.verdict, both.run_id) == (CONFIRMED, "slower")
    assert both.figures.startswith("87.0 inputs/s") and both.figures.endswith(
        "; all 2 confirmation runs held, the slowest shown")


@pytest.mark.unit
def test_only_an_excluded_or_interrupted_run_is_listed_without_being_counted():
    excluded = _run(status=Status.EXCLUDED, pass_s=13.0, run_id="x",
                    reason="host maintenance (excluded by ana at 2026-11-30T10:00:00+00:00)")
    cut = _run(status=Status.FAILED, pass_s=None, run_id="cut", reason="interrupted (launcher gone, run left RUNNING)")
    held = _run(pass_s=10.0, run_id="held")
    found = confirm(DURATIONS, 1000, [excluded, cut, held], 600)
    assert found.verdict == CONFIRMED and found.run_id == "held"
    assert found.figures.endswith("; 1 run excluded, 1 not counted (each listed under Confirmation)")
    assert [(r.run_id, r.outcome, r.figures) for r in found.runs[:2]] == [
        ("x", EXCLUDED, "host maintenance (excluded by ana at 2026-11-30T10:00:00+00:00)"),
        ("cut", NOT_COUNTED, "interrupted (launcher gone, run left RUNNING): stopped before any rate or verdict")]
    # a failure caused from outside counts until `gpucost exclude` sets it aside with its documented cause
    killed = _run(status=Status.FAILED, pass_s=None, run_id="k", reason="killed by signal 9")
    assert confirm(DURATIONS, 1000, [killed, held], 600).verdict == NOT_CONFIRMED
    assert confirm(DURATIONS, 1000, [excluded], 600).verdict == NOT_YET


def _slow_then_held(experiment, tmp_path):
    """Five benchmark passes of batch4 (14.8-15.0 h a corpus), a confirmation run slower than the slowest, then one
    that held; the protocol, and the two confirmation runs' ids."""
    from tests.scenario import RTX, lock_to
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="confirmation: {min_s: 600}\n")
    lock_to(protocol)
    for hours in (14.8, 14.85, 14.9, 14.95, 15.0):
        experiment("batch4", RTX, hours * H)
    confirming = {"role": "confirmation", "fingerprint": "c" * 64}
    slowed = experiment("batch4", RTX, 16.0 * H, metrics_extra={"measured_total_s": 16.0 * H, "repetitions": 1},
                        **confirming)
    held = experiment("batch4", RTX, 14.9 * H, metrics_extra={"measured_total_s": 14.9 * H, "repetitions": 1},
                      **confirming)
    return protocol, slowed, held


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
                                     f"{RTX}: 0.0174 inputs/s: 1 repetition of 1,000 confirmation inputs in 57,600 s, "
                                     "below the slowest benchmark pass")
    lines = dict(card.lines(after))
    assert lines["No decision"] == "the choice did not hold on the confirmation run"
    assert lines["Confirmation"].startswith(f"batch4 on {RTX} not confirmed: 0.0174 inputs/s: 1 repetition of 1,000 "
                                            "confirmation inputs in 57,600 s")
    assert [standing.role(a, after.choice) for a in after.assessments] == [standing.NOT_CONFIRMED]
    # confirmation passes are not benchmark passes: the durations the decision reads are the five
    assert len(after.assessments[0].configuration.durations.values) == 5


@pytest.mark.unit
def test_a_later_confirmation_run_that_held_does_not_commit_a_choice_that_did_not_hold(experiment, tmp_path):
    from gpucost_mlflow.report import build
    from tests.scenario import RTX, report

    protocol, slowed, held = _slow_then_held(experiment, tmp_path)
    found, _ = report(protocol_path=protocol)
    assert found.decision.startswith("No decision: the choice did not hold on the confirmation run (batch4 on "
                                     f"{RTX}: 0.0174 inputs/s: 1 repetition of 1,000 confirmation inputs in 57,600 s")
    assert "1 of 2 confirmation runs did not hold" in found.decision
    listed = {title: lines for title, _, lines in found.lists}[build.CONFIRMATION_TITLE]
    assert listed[1].startswith(f"batch4 on {RTX}, confirmation run 1 of 2 ({slowed}): not confirmed: 0.0174 inputs/s")
    assert listed[2].startswith(f"batch4 on {RTX}, confirmation run 2 of 2 ({held}): confirmed: 0.0186 inputs/s: "
                                "1 repetition of 1,000 confirmation inputs in 53,640 s")


@pytest.mark.unit
def test_a_confirmation_run_excluded_for_a_documented_cause_is_listed_with_it_and_not_counted(experiment, tmp_path):
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.report import build, card
    from gpucost_mlflow.tracking import exclusions
    from tests.scenario import RTX, report

    protocol, slowed, held = _slow_then_held(experiment, tmp_path)
    exclusions.exclude(MlflowClient(), slowed, "contended", "another job shared the GPU (scheduler log 4711)",
                       who="ana")
    found, _ = report(protocol_path=protocol)
    assert found.decision.startswith(f"Decision: batch4 on {RTX}")
    assert dict(card.lines(found))["Run"].endswith(
        "; confirmed: 0.0186 inputs/s: 1 repetition of 1,000 confirmation inputs in 53,640 s (benchmark steady laps "
        "0.0185-0.0188 inputs/s); quality held; 1 run excluded (each listed under Confirmation)")
    listed = {title: lines for title, _, lines in found.lists}[build.CONFIRMATION_TITLE]
    assert listed[1].startswith(f"batch4 on {RTX}, confirmation run 1 of 2 ({slowed}): excluded: contended: another "
                                "job shared the GPU (scheduler log 4711) (excluded by ana at ")
    assert listed[2].startswith(f"batch4 on {RTX}, confirmation run 2 of 2 ({held}): confirmed: ")


@pytest.mark.unit
def test_the_decision_run_says_confirmed_and_each_confirmation_run_gets_its_verdict_and_rate(experiment, tmp_path):
    """Confirmed where people look (issue 66): the decision run's name, tag and description; each confirmation run
    its verdict and its rate over the slowest benchmark pass's, the confirmation view's columns."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.core.names import RATE_VS_SLOWEST
    from gpucost_mlflow.report.decided import decided
    from gpucost_mlflow.tracking import decision_run, exclusions, schema
    from tests.scenario import RTX, report

    protocol, slowed, held = _slow_then_held(experiment, tmp_path)
    exclusions.exclude(MlflowClient(), slowed, "contended", "another job shared the GPU", who="ana")
    found, _ = report(protocol_path=protocol)
    record = decided(found, {}, {})
    assert record.name == "batch4 · chosen · confirmed"
    assert record.tags[schema.DECISION_CONFIRMATION] == f"confirmed: batch4 on {RTX}"
    assert f"**Confirmed:** batch4 on {RTX} (0.0186 inputs/s" in record.tags[schema.NOTE]
    assert record.confirmations[slowed][0] == "excluded" and record.confirmations[held][0] == "confirmed"
    client = MlflowClient()
    decision_run.log_decision(client, client.get_run(held).info.experiment_id, record)
    run = client.get_run(held)
    assert run.data.tags[schema.CONFIRMATION] == "confirmed"
    assert run.data.metrics[RATE_VS_SLOWEST] == pytest.approx(15.0 / 14.9, abs=1e-3)  # the slowest benchmark: 15 h
    assert "verdict in the latest decision: **confirmed**" in run.data.tags[schema.NOTE]
    assert client.get_run(slowed).data.tags[schema.CONFIRMATION] == "excluded"


def _chosen(variant: str, fingerprint: str):
    """A chosen configuration of the variant, compared on the corpus with this fingerprint."""
    from gpucost_mlflow.core.inputs.identity import Identity
    from gpucost_mlflow.core.measurement.stats import Durations
    from gpucost_mlflow.core.money.decision import Assessment, Configuration

    device = "NVIDIA GeForce RTX 4090"
    identity = Identity(device, variant, corpus_fingerprint=fingerprint)
    configuration = Configuration(device, variant, ["accepted"] * 5, Durations(DURATIONS), {}, identity=identity)
    return Assessment(configuration, feasible=True, feasibility="feasible")


def _plan(tmp_path):
    """A confirmation plan over a variants file with a lanes variant, on a two-input corpus; the corpus."""
    import yaml

    from gpucost_mlflow.core.inputs.corpus import read_corpus
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.core.inputs.variants import read_declaration
    from gpucost_mlflow.flow.confirm import ConfirmPlan
    from tests.helpers import SHIPPED_PROTOCOL, VARIANTS

    variants = tmp_path / "variants.yaml"
    variants.write_text(yaml.safe_dump({"defaults": yaml.safe_load(VARIANTS.read_text())["defaults"],
                                        "variants": {"batch8": {}, "batch8-lanes2": {"lanes": 2}}}))
    corpus = tmp_path / "confirmation.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{n}", "text": f"text {n}", "label": "fresh", "bucket": "short"})
                              + "\n" for n in range(2)))
    plan = ConfirmPlan("scenario", load_protocol(SHIPPED_PROTOCOL), SHIPPED_PROTOCOL, read_declaration(variants),
                       corpus, tmp_path / "model", tmp_path)
    return plan, read_corpus(corpus)


@pytest.mark.unit
def test_a_confirmation_on_the_corpus_the_configuration_was_compared_on_is_refused(tmp_path):
    from gpucost_mlflow.core.errors import GpucostError
    from gpucost_mlflow.flow.confirm import check

    plan, corpus = _plan(tmp_path)
    with pytest.raises(GpucostError, match=rf"^{plan.corpus_path} is the corpus batch8 on NVIDIA GeForce RTX 4090 "
                                           "was compared on: a confirmation runs on a disjoint corpus$"):
        check([_chosen("batch8", "a" * 64), _chosen("batch8", corpus.fingerprint)], plan)
    check([_chosen("batch8", "a" * 64)], plan)  # a disjoint corpus: nothing refused


@pytest.mark.unit
def test_a_lanes_configuration_is_refused_confirmation(tmp_path):
    from gpucost_mlflow.core.errors import GpucostError
    from gpucost_mlflow.flow.confirm import check

    plan, _ = _plan(tmp_path)
    with pytest.raises(GpucostError, match=r"^batch8-lanes2 on NVIDIA GeForce RTX 4090 runs in lanes, whose clocks "
                                           "cannot repeat the corpus: it cannot be confirmed for confirmation.min_s$"):
        check([_chosen("batch8", "a" * 64), _chosen("batch8-lanes2", "a" * 64)], plan)


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


@pytest.mark.unit
def test_a_confirmation_that_lost_an_answer_says_so_beside_quality_held_and_its_one_run_is_one_line():
    # The demo's confirmation (issue 66): one answer of 1,000 lost against the reference's outputs, quality held; the
    # card and the Confirmation section say the lost answer, and a verdict resting on one run is not printed twice.
    from gpucost_mlflow.core.measurement.confirmation import Confirmation, RunOutcome
    from gpucost_mlflow.report import confirmations

    held = RunOutcome("r1", CONFIRMED, "281.9 inputs/s: 9 repetitions of 1,000 "
                                   "confirmation inputs in 31 s (benchmark passes 269.0-316.2 inputs/s); quality held",
                                   281.9, 31.0)
    verdict = Confirmation(CONFIRMED, held.figures, "r1", (held,))
    changed = confirmations._with_flips(verdict, {"r1": "1 lost, 0 gained of 1,000 inputs (exact McNemar p = 1)"})
    assert changed.figures.endswith("; quality held: 1 lost, 0 gained of 1,000 inputs (exact McNemar p = 1) against "
                                    "the reference's outputs") and changed.runs[0].figures == changed.figures
    one = f"batch16: confirmed by its one confirmation run (r1): {changed.figures}"
    assert confirmations.lines({"batch16": changed}) == [one]


@pytest.mark.unit
@pytest.mark.parametrize("child_imports, starters", [("once", 1), ("per_pass", 0)])
def test_under_child_imports_once_the_confirmation_forks_from_one_starter(tmp_path, monkeypatch, child_imports,
                                                                         starters):
    """`child_imports: once` holds for the confirmation as for a campaign: its passes fork from one starter, whose
    imports each counts in its load_s; without it each pass's child imports for itself."""
    import contextlib
    import dataclasses

    from gpucost_mlflow.execution import forkserver
    from gpucost_mlflow.flow import confirm as confirm_flow

    entered, seen = [], []

    @contextlib.contextmanager
    def starter():
        entered.append(1)
        monkeypatch.setenv(forkserver.ENV, "starter")
        yield
        monkeypatch.delenv(forkserver.ENV)

    monkeypatch.delenv(forkserver.ENV, raising=False)
    monkeypatch.setattr(forkserver, "serving", starter)
    monkeypatch.setattr(confirm_flow, "execute", lambda request: seen.append(forkserver.server()) or "ran")
    plan, _ = _plan(tmp_path)
    plan = dataclasses.replace(plan, protocol=dataclasses.replace(plan.protocol, child_imports=child_imports))
    confirm_flow.run([_chosen("batch8", "compared-elsewhere")], plan, lambda *_: None)
    assert len(entered) == starters
    assert bool(seen[0]) == (starters == 1)


@pytest.mark.unit
def test_a_run_tagged_as_the_reference_outputs_is_never_counted_whatever_its_clock():
    """`gpucost confirm` runs the reference variant once on the confirmation corpus for another configuration to be
    judged against. On a slow host its one lap can outlast confirmation.min_s; it is still not a confirmation."""
    reference = ConfirmationRun("ref", Status.ACCEPTED, "every check passed", 2000, 26.0, 700.0, 1,
                                reference_outputs=True)
    found = confirm(DURATIONS, 1000, [reference], 600)
    assert found.verdict == NOT_YET
    assert found.figures == "no confirmation run yet; 1 not counted (each listed under Confirmation)"
    assert found.runs[0].outcome == NOT_COUNTED and found.runs[0].figures == (
        "accepted, tagged as the reference's outputs on the confirmation corpus: compared against, not a confirmation")
    assert confirm(DURATIONS, 1000, [reference, _run(pass_s=11.0)], 600).verdict == CONFIRMED


def _tie_of_two(experiment, tmp_path):
    """batch4 and batch8 on one GPU, five passes each of the same 14.8-15.0 h a corpus: tied at one cost, batch4 the
    one the card runs (then the name). The protocol."""
    from tests.scenario import RTX, lock_to
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="confirmation: {min_s: 600}\n")
    lock_to(protocol)
    for hours in (14.8, 14.85, 14.9, 14.95, 15.0):
        for variant in ("batch4", "batch8"):
            experiment(variant, RTX, hours * H)
    return protocol


@pytest.mark.unit
@pytest.mark.parametrize("second_hours, ends", [(16.0, "No decision: the choice did not hold on the confirmation run"),
                                                (14.9, "Decision: batch8 on ")])
def test_confirm_goes_on_to_the_next_of_a_tie_when_the_one_it_runs_does_not_hold(experiment, tmp_path, second_hours,
                                                                                   ends):
    """The one the card runs is confirmed first; slower than its slowest benchmark pass it leaves the tie (and stays
    not confirmed), and the next one the card then runs is confirmed in turn, as a user running `gpucost confirm` again
    would; nothing is run twice, and the loop ends on a choice that held or on nothing committed. The passes are
    recorded as a confirmation run records them (`confirm_one` stands in for the pass itself)."""
    from gpucost_mlflow.flow.confirm import in_turn
    from tests.scenario import RTX, report

    protocol = _tie_of_two(experiment, tmp_path)
    first, _ = report(protocol_path=protocol)
    assert first.decision.startswith("Decision (tied): batch4 on") and first.choice.chosen[0].configuration.variant \
        == "batch4"
    hours = {"batch4": 16.0, "batch8": second_hours}
    calls = []

    def confirm_one(a, left):
        variant = a.configuration.variant
        calls.append((variant, left))
        experiment(variant, RTX, hours[variant] * H, role="confirmation", fingerprint="c" * 64,
                   metrics_extra={"measured_total_s": hours[variant] * H, "repetitions": 1})

    built, ran = in_turn(first, lambda: report(protocol_path=protocol)[0], confirm_one)
    assert calls == [("batch4", ""), ("batch8", f"batch4 on {RTX}")]
    assert ran == [f"batch4 on {RTX}", f"batch8 on {RTX}"]
    assert built.decision.startswith(ends)
    assert built.confirmations[f"batch4 on {RTX}"].verdict == NOT_CONFIRMED  # left the tie, never retried away
    assert [a.configuration.variant for a in built.choice.unconfirmed][:1] == ["batch4"]
    # read again, nothing more is run: the choice held, or nothing is committed
    assert in_turn(built, lambda: report(protocol_path=protocol)[0], confirm_one)[1] == []


@pytest.mark.unit
def test_the_reference_outputs_mark_is_read_back_from_the_run(experiment, tmp_path):
    """A run `gpucost confirm` tagged as the reference's outputs, its one lap past confirmation.min_s and slower than
    every benchmark pass, is listed and not counted: the configuration stays not yet confirmed."""
    from gpucost_mlflow.tracking import schema
    from tests.scenario import RTX, lock_to, report
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="confirmation: {min_s: 600}\n")
    lock_to(protocol)
    for hours in (14.8, 14.85, 14.9, 14.95, 15.0):
        experiment("batch4", RTX, hours * H)
    marked = experiment("batch4", RTX, 16.0 * H, role="confirmation", fingerprint="c" * 64,
                        metrics_extra={"measured_total_s": 16.0 * H, "repetitions": 1},
                        tags_extra={schema.CONFIRMATION: schema.REFERENCE_OUTPUTS})
    found, _ = report(protocol_path=protocol)
    verdict = found.confirmations[f"batch4 on {RTX}"]
    assert verdict.verdict == NOT_YET and [(r.run_id, r.outcome) for r in verdict.runs] == [(marked, NOT_COUNTED)]
    assert found.decision.startswith(f"Decision: batch4 on {RTX}")
