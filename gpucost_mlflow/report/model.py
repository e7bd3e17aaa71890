"""The decision report's model: what `build.py` decides from the evidence the store gave (tracking/evidence.py), and
every writer (Markdown, HTML, the card, the sections' tables) reads. Plain data: no writer, no store."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpucost_mlflow.core.money.decided import Decision
from gpucost_mlflow.tracking.ui import LOCAL_UI

if TYPE_CHECKING:  # annotations only: importing plots would load matplotlib for every reader of the model
    from collections.abc import Mapping

    import pandas as pd

    from gpucost_mlflow.core.inputs.protocol_sections import PlanAssumptions
    from gpucost_mlflow.core.measurement.confirmation import Confirmation
    from gpucost_mlflow.core.measurement.stats import Separation
    from gpucost_mlflow.core.money.choice import Choice
    from gpucost_mlflow.core.money.decision import Assessment
    from gpucost_mlflow.core.money.measuring_price import Price, Spent
    from gpucost_mlflow.report.measured import ReportAttempts
    from gpucost_mlflow.report.plots import Figure
    from gpucost_mlflow.report.tables import Summary


@dataclass
class Report:
    experiment: str
    question: str
    protocol_digest: str
    catalog: str
    decision: str
    warnings: list[str]
    attempts: pd.DataFrame
    summaries: list[Summary]
    separations: list[tuple[str, Separation]]
    decided: Decision  # what the report decided, made once (report/deciding.py): every writer reads it, none decides
    deadline: str
    plan: PlanAssumptions | None
    figures: dict[str, Figure] = field(default_factory=dict)  # by key: cost_volume, durations, memory (plots.py)
    overhead: tuple = (None, 0, 0)  # harness overhead per pass (s) by the campaigns' figure, attempts, campaigns
    other_costs: tuple = ()
    example_prices: bool = False
    exclusions: list = field(default_factory=list)  # VariantExclusions, one per variant (PROTOCOL.md §6)
    exclusion_rule: str = ""
    passes_per_variant: int | None = None  # the protocol's, named in the per-configuration header
    experiment_id: str = ""  # for run links; without it they use the UI's direct route #/runs/<id>
    # The command that runs the protocol's second stage (`gpucost campaign --settle ...`, its ceiling), or why none can
    settle: str = ""
    priced_hint: str = ""  # nothing priced: which devices the catalog prices, and the `gpucost fleet plan` command
    reproduce: str = "bounded-deviation"  # what the protocol declares a repetition is to reproduce
    confirm: str = ""  # the exact `gpucost confirm` command of this decision
    seeds: tuple = ()  # the protocol's seeds (none: every pass at seed 0)
    written: dt.date | None = None  # the day the report was built: a planned start before it is said to be past
    read_at: dt.datetime | None = None  # the moment it was built: a start at the report is placed there
    start_at_report: bool = False  # the protocol's plan.start is at_report (the window runs from read_at)
    # the MLflow UI run links open: the tracking server, else where `mlflow ui` serves by default
    ui_root: str = LOCAL_UI
    rejudged: list[str] = field(default_factory=list)  # pending passes `gpucost report` judged first, one line each
    # 'what-if protocol other.yaml (changed deadline)' when decided under another protocol than the lock
    what_if: str = ""
    what_if_digest: str = ""  # that protocol's digest, shown beside the locked one (protocol_digest)
    protocol_file: str = ""  # the protocol file the report read (a kept one when the shipped default has changed)
    bill: list[str] = field(default_factory=list)  # committed against paid (report/bill.py), empty without a bill
    delivered: str = ""  # the latest delivery fleet's forecast held against what it realized: the card's last line
    # Bullet sections after the plan tables, each (title, what it says, lines): prices and their age, hosted
    # endpoints, the bill; a section without lines is left out.
    lists: list[tuple[str, str, list[str]]] = field(default_factory=list)
    # The attempts as read, beside `attempts` (their table): each configuration's passes found by its identity, for
    # the standing and committed cost the decision run gives them; None for a report made without them.
    measured: ReportAttempts | None = None
    # The price of measuring (report/measuring.py): the hours the campaigns it read recorded (None: none recorded),
    # and those hours at the committed plan's offer for a decided report, or why they are not priced.
    spent: Spent | None = None
    spent_price: Price | None = None

    @property
    def assessments(self) -> tuple[Assessment, ...]:
        return self.decided.assessments

    @property
    def choice(self) -> Choice:
        return self.decided.choice

    @property
    def confirmations(self) -> Mapping[str, Confirmation]:
        """The chosen configurations' Confirmation, by name."""
        return self.decided.confirmations

    @property
    def stage(self) -> object:
        """core/campaign/settle.StagePlan: the latest second stage recorded on the passes, if any."""
        return self.decided.stage

    @property
    def break_evens(self) -> list[str]:
        return [b.describe() for b in self.decided.break_evens]

    @property
    def title(self) -> str:
        """The page title; a what-if protocol says so first, a what-if catalog of example prices in it."""
        kind = "Decision report (what-if: example price)" if self.example_prices else "Decision report"
        return f"What-if protocol: {kind[0].lower()}{kind[1:]}: {self.experiment}" if self.what_if \
            else f"{kind}: {self.experiment}"


@dataclass
class VariantExclusions:
    """One variant's excluded attempts (k of its n attempts), each as [device, run id, cause, by, when]."""
    variant: str
    attempts: int
    excluded: list = field(default_factory=list)
