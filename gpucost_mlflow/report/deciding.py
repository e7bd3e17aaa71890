"""The decision made once, from the configurations under the protocol's rules: every configuration assessed, the one
choice made of them once every device of a second stage has reported and the chosen ones' confirmation runs are
read, and the decision note; core/money/decided.py's `Decision`, which the report and the decision run only read."""

from __future__ import annotations

from gpucost_mlflow.core.campaign.settle import unreported
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.money.choice import await_stage, choose, hold
from gpucost_mlflow.core.money.decided import Decision, made
from gpucost_mlflow.core.money.decision import Configuration, Rules, assess
from gpucost_mlflow.core.money.decision_note import decide
from gpucost_mlflow.report import confirmations
from gpucost_mlflow.report.measured import ReportAttempts
from gpucost_mlflow.report.stage import latest_stage, progress


def decision(configs: list[Configuration], rules: Rules, protocol: Protocol, measured: ReportAttempts) -> Decision:
    """Every configuration assessed under the rules, the one choice made of them (read by the tables, the card, the
    figures and the decision run alike), its confirmation verdicts, the latest second stage and the decision note."""
    assessments = assess(configs, rules)
    declared = protocol.deadline is not None
    choice = choose(assessments, deadline_declared=declared)
    stage = latest_stage(measured.table)
    if stage is not None:
        missing = unreported(stage, progress(assessments))
        choice = await_stage(choice, assessments, {s.device: s.variants for s in stage.shares}, missing)
    confirmed = confirmations.verdicts(measured, choice.chosen, protocol.corpus_size, protocol.confirmation.min_s)
    choice = hold(choice, confirmed)
    note = decide(assessments, rules.expected_deliverables, protocol.corpus_size, deadline_declared=declared,
                  choice=choice)
    return made(assessments, choice, note, confirmed, stage)
