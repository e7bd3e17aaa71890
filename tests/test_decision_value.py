"""The decision is one frozen value, made once (core/money/decided.py, report/deciding.py): the card, the sections,
the figures and the decision run read it and never decide again."""

import ast
import dataclasses
from pathlib import Path

import pytest

from gpucost_mlflow.core.money.choice import doubt
from gpucost_mlflow.report import card, decided
from tests.synthetic_report import decided_report
from tests.test_report_card import NOISE_PRICED

REPORT = Path(__file__).resolve().parents[1] / "gpucost_mlflow" / "report"
READERS = ("card.py", "card_window.py", "sections.py", "plots.py", "decided.py", "decision_text.py", "render.py")
# What decides: none of it is called while the report is written or the decision run is made.
DECIDING = {"assess", "assess_one", "choose", "hold", "await_stage", "doubt", "device_plans", "break_evens",
            "break_even", "priced", "steps", "decide", "made", "unpriced", "covering_plans", "separate",
            "repetitions_needed", "settling"}


def test_the_report_and_the_decision_run_read_the_decision_and_never_decide_again():
    found = []
    for name in READERS:
        for node in ast.walk(ast.parse((REPORT / name).read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpucost_mlflow.core."):
                found += [f"{name}: {alias.name}" for alias in node.names if alias.name in DECIDING]
    assert not found, found


def test_the_decision_is_frozen_and_its_doubt_is_the_one_the_card_and_the_decision_run_read():
    report = decided_report(changed=NOISE_PRICED, figures=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.decided.choice = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.choice.none = ""
    found = report.decided.doubt
    assert found == doubt(report.choice.undecided)
    assert dict(card.lines(report))["In doubt"].startswith("0.50 USD")
    run = decided.decided(dataclasses.replace(report, attempts=report.attempts.assign(campaign_id="c1")), {}, {})
    assert run.tags["gpucost.decision.rent_offer"] == found.plan.describe()


def test_each_assessment_is_shown_once_as_the_tables_show_it_and_its_curve_is_worked_out_once():
    report = decided_report(figures=False)
    shown = {a.configuration.variant: report.decided.shown_of(a) for a in report.assessments}
    assert shown["batch8-int8"].priced.startswith("not committed: ") and shown["batch8-int8"].plan is None
    chosen = report.choice.chosen[0]
    curve = report.decided.curve(chosen)
    assert curve.steps is curve.steps and curve.steps[0].volume == 1  # drawn once, when first read
    assert report.decided.curve(shown["batch8-int8"]) is None  # a copy shown without a price has no curve


def test_what_would_settle_an_undecided_choice_is_worked_out_once_and_the_card_says_it():
    report = decided_report(changed=NOISE_PRICED, figures=False)
    (settling,) = report.decided.settling
    assert settling.first is report.choice.undecided[0] and settling.other is report.choice.undecided[1]
    assert not settling.too_short and settling.needed
    assert dict(card.lines(report))["Settle"].startswith(f"about {settling.needed} passes per configuration")
    assert decided_report(figures=False).decided.settling == ()  # a decided choice: nothing to settle
