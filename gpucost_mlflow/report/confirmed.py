"""What a decision says of its confirmation where people look (issue 66): the word its run name carries, its tag and
description line (confirmed, not yet confirmed or not confirmed, with how many of a tie), and each confirmation
run's verdict and rate against the benchmark's slowest pass, the columns of the confirmation runs' view. Words
only: report/decided.py puts them in the decision's record and tracking/decision_run.py writes them."""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_mlflow.core.measurement.confirmation import CONFIRMED, NOT_CONFIRMED, NOT_YET
from gpucost_mlflow.core.money.choice import NOT_HELD
from gpucost_mlflow.report.model import Report


@dataclass(frozen=True)
class Said:
    """The decision's confirmation: its verdict (that of the one configuration to run), how many of the chosen held
    out of how many were chosen (a tie: 1 of 3), and that one's name."""

    verdict: str
    held: int
    chosen: int
    run: str

    @property
    def word(self) -> str:
        """The run name's word: `confirmed`, `confirmed 1 of 3` for a tie, `not yet confirmed`, `not confirmed`."""
        return f"{self.verdict} {self.held} of {self.chosen}" if self.verdict == CONFIRMED and self.chosen > 1 \
            else self.verdict

    @property
    def tag(self) -> str:
        """`gpucost.decision.confirmation`: the verdict, then for a tie how many of it and the one run."""
        if self.chosen <= 1:
            return f"{self.verdict}: {self.run}" if self.run else self.verdict
        return f"{self.verdict}: {self.held} of {self.chosen} tied ({self.run}, the one to run; the others equal " \
               "in cost, not run)"


def said(report: Report) -> Said | None:
    """The decision's confirmation, None where nothing was chosen for a reason other than a confirmation that did
    not hold (nothing to confirm)."""
    choice = report.choice
    if not choice.decided:
        if choice.none == NOT_HELD:
            return Said(NOT_CONFIRMED, 0, len(choice.unconfirmed), choice.unconfirmed[0].configuration.name)
        return None
    first = choice.chosen[0].configuration.name
    chosen = [a.configuration.name for a in choice.chosen + choice.unconfirmed]
    found = report.confirmations.get(first)
    verdict = found.verdict if found is not None else NOT_YET
    held = sum(1 for name in chosen if name in report.confirmations and report.confirmations[name].holds)
    return Said(verdict, held, len(chosen), first)


def line(report: Report) -> str:
    """The description's line on the confirmation ('' when nothing was chosen to confirm)."""
    found = said(report)
    if found is None:
        return ""
    verdict = report.confirmations.get(found.run)
    figures = f" ({verdict.figures})" if verdict is not None else ""
    tie = f"{found.held} of {found.chosen} tied configurations confirmed; " if found.chosen > 1 else ""
    return f"**{found.verdict.capitalize()}:** {tie}{found.run}{figures}"


def run_verdicts(report: Report) -> dict[str, tuple[str, float | None]]:
    """Each confirmation run of the chosen configurations (run id -> its outcome in this decision, its rate over the
    slowest benchmark pass's); none under a what-if protocol, which is not the experiment's decision."""
    if report.what_if:
        return {}
    return {outcome.run_id: (outcome.outcome, outcome.against_slowest)
            for confirmation in report.confirmations.values() for outcome in confirmation.runs}

