"""The whole-rental forecast of one configuration (PROTOCOL.md §9): every term shown, a range beside the median.

window = setup + declared waiting
       + every comparison attempt run on the device, on the real schedule: the union of their run wall
         times per host, so attempts run side by side on one lot's GPUs count once (failed, rejected and
         excluded attempts included; the plain sum is kept beside it)
       + (children + planned restarts) x (load + warm-up + shape setup)  the deliverables' own start-ups and each
                                                         restart, each paying the setup of every new input shape once
                                                         (the first lap over the steady one, issue 62): one child
                                                         per `deliverables.per_child` corpora of a stream (one child
                                                         for all of them when the protocol does not declare it; a
                                                         lanes configuration: a fresh child per corpus, as
                                                         `gpucost deliver` runs it)
       + ceil(expected deliverables / streams) x deliverables audit  under `deliverables.audit`: per delivered corpus
                                                         the reference variant's own child, its load + warm-up + its
                                                         per-input time x `sample` (its measured passes')
       + ceil(expected deliverables / streams) x (pass + evaluation + export)

A configuration that uses several GPUs (lanes) has that parallelism inside its measured pass already;
deliverables run one after another (one stream) unless the protocol declares them side by side on a
lot's idle GPUs (`deliverables.side_by_side`), and the assumption is shown. The range puts the
deliverables at the fastest and slowest observed pass. It is a forecast: it never counts as accepted
deliverables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.measurement.timeline import Span, sum_seconds, union_seconds
from gpucost_mlflow.core.names import CONVERT_S, EVAL_S, EXPORT_S, LOAD_S, SHAPE_SETUP_S, WARMUP_S


@dataclass(frozen=True)
class Audit:
    """The deliverables audit of one delivered corpus as the forecast counts it: the reference variant's own child
    loads, warms up and labels `sample` inputs (`deliverables.audit`, flow/judging.py), from measured figures."""

    reference: str
    sample: int
    startup_s: float  # its median load + warm-up
    per_input_s: float  # its median pass over a corpus, per input
    source: str  # whose measured passes gave the figures

    @property
    def each_h(self) -> float:
        """One audit's hours: a start-up and the sample labelled."""
        return (self.startup_s + self.sample * self.per_input_s) / 3600

    def said(self) -> str:
        """'batch8's own child per delivered corpus: 2.1 s load + warm-up + 20 inputs x 0.012 s (...)'."""
        return (f"{self.reference}'s own child per delivered corpus: {self.startup_s:.3g} s load + warm-up + "
                f"{self.sample:,} input{'s' if self.sample != 1 else ''} x {self.per_input_s:.3g} s ({self.source})")


@dataclass(frozen=True)
class Forecast:
    """The terms of the window, in hours, and the expected volume they were sized for."""

    setup_h: float
    waiting_h: float
    comparisons_h: float  # the union of the attempts' run wall times per host: the real schedule
    comparisons: int
    comparisons_estimated: int
    restarts: int
    startup_h: float
    deliverables: int
    per_deliverable_h: tuple[float, float, float]  # fastest, median, slowest observed pass (+ eval + export)
    comparisons_sum_h: float | None = None  # the same attempts' run wall times added up, overlaps counted twice
    streams: int = 1  # deliverables processed side by side (1: one after another)
    streams_note: str = "one deliverable after another"
    conversion_h: float = 0.0  # an engine's export or conversion, paid once per rental (its cache serves restarts)
    per_child: int | None = None  # deliverables.per_child: corpora one child processes (None: all of a stream's)
    startup_each_h: float = 0.0  # one load + warm-up + shape setup, the median's
    shape_setup_each_h: float = 0.0  # of it, the setup of each new input shape a fresh process pays (issue 62)
    lanes: int = 1  # a lanes configuration (lanes > 1) is delivered one corpus per fresh child, whatever per_child says
    audit: Audit | None = None  # deliverables.audit: the reference variant's child per delivered corpus

    @property
    def corpora_per_child(self) -> int | None:
        """The corpora one child processes as `gpucost deliver` runs them: 1 for lanes, else per_child (None: all)."""
        return 1 if self.lanes > 1 else self.per_child

    def children(self, deliverables: int) -> int:
        """The children one stream starts for this volume, each loading and warming up once."""
        if self.corpora_per_child is None:
            return 1
        return max(1, math.ceil(math.ceil(deliverables / self.streams) / self.corpora_per_child))

    def audits(self, deliverables: int) -> int:
        """The audit children this volume starts: one per delivered corpus under deliverables.audit, else none."""
        return deliverables if self.audit is not None else 0

    def audit_for(self, deliverables: int) -> float:
        """The audits' hours at this volume: one after each corpus of a stream."""
        return math.ceil(self.audits(deliverables) / self.streams) * self.audit.each_h if self.audit else 0.0

    @property
    def audit_h(self) -> float:
        return self.audit_for(self.deliverables)

    def marginal_h(self, which: int = 2) -> float:
        """The hours one more round of deliverables adds (which: 0 fastest, 1 median, 2 slowest pass): its pass,
        evaluation and export, its audit and its share of a child's start-up."""
        starts = self.startup_each_h / self.corpora_per_child if self.corpora_per_child else 0.0
        return self.per_deliverable_h[which] + (self.audit.each_h if self.audit else 0.0) + starts

    def startup_for(self, deliverables: int) -> float:
        """The start-up hours at another volume: the declared volume's, with its children counted again."""
        return self.startup_h + (self.children(deliverables) - self.children(self.deliverables)) * self.startup_each_h

    def hours_for(self, deliverables: int, which: int = 1) -> float:
        """The window for another volume, from the same terms (which: 0 fastest, 1 median, 2 slowest pass)."""
        fixed = self.setup_h + self.waiting_h + self.comparisons_h + self.startup_for(deliverables) + self.conversion_h
        return (fixed + self.audit_for(deliverables)
                + math.ceil(deliverables / self.streams) * self.per_deliverable_h[which])

    @property
    def hours(self) -> float:
        return self.hours_for(self.deliverables, 1)

    @property
    def low_hours(self) -> float:
        return self.hours_for(self.deliverables, 0)

    @property
    def high_hours(self) -> float:
        return self.hours_for(self.deliverables, 2)

    @property
    def deliverables_h(self) -> float:
        return math.ceil(self.deliverables / self.streams) * self.per_deliverable_h[1]

    @property
    def overlap_saved_h(self) -> float:
        """Hours the real schedule saves over adding every attempt's run wall time."""
        saved = (self.comparisons_sum_h or self.comparisons_h) - self.comparisons_h
        return saved if saved > 1e-6 else 0.0  # below 3.6 ms: float noise, not an overlap

    def terms(self) -> str:
        """'4 h setup + 0 h waiting + 0.17 h comparisons (30 attempts) + ...', the sum spelled out."""
        estimated = (f", {self.comparisons_estimated} without an end time counted by their stage times"
                     if self.comparisons_estimated else "")
        saved = (f", {_h(self.comparisons_sum_h)} if their overlaps were counted twice" if self.overlap_saved_h > 0
                 else "")
        return (f"{self.setup_h:g} h setup + {self.waiting_h:g} h waiting + {_h(self.comparisons_h)} comparisons "
                f"({self.comparisons} attempt{'s' if self.comparisons != 1 else ''} on this device on the real "
                f"schedule{saved}{estimated}) + "
                f"{_h(self.startup_h)} start-up ({self._starts()} x load + warm-up{self._shape_setup()}) + "
                + (f"{_h(self.audit_h)} deliverables audit ({self.audits(self.deliverables):,} x "
                   f"{self.audit.said()}) + " if self.audit else "")
                + (f"{_h(self.conversion_h)} engine export (once per rental) + " if self.conversion_h else "")
                + f"{_h(self.deliverables_h)} "
                f"for {self.deliverables:,} expected deliverable{'s' if self.deliverables != 1 else ''}, "
                f"{self.streams_note} (forecast)")


    def _shape_setup(self) -> str:
        """' + 4.2 s shape setup' where a fresh process pays one ('' where none was measured)."""
        seconds = self.shape_setup_each_h * 3600
        return f" + {seconds:,.3g} s shape setup" if seconds > 0 else ""

    def _starts(self) -> str:
        """'(1 + 1 restarts)', '(8 children of 500 corpora + 1 restarts)' under deliverables.per_child, or
        '(3 children of 1 corpus, a lanes configuration's fresh child per corpus + 0 restarts)'."""
        each = self.corpora_per_child
        if each is None:
            return f"(1 + {self.restarts} restarts)"
        children = self.children(self.deliverables)
        lanes = ", a lanes configuration's fresh child per corpus" if self.lanes > 1 else ""
        return (f"({children:,} child{'ren' if children != 1 else ''} of {each:,} "
                f"corp{'ora' if each != 1 else 'us'}{' per stream' if self.streams > 1 else ''}{lanes} + "
                f"{self.restarts} restarts)")

    def startup_said(self, note) -> str:
        """The forecast table's start-up cell: the children's start-ups, and the audit's beside them, each said in a
        note (`note` turns a text into its footnote mark)."""
        said = f"{self.startup_h:.3f}" + (f" {note(self._starts()[1:-1])}" if self.lanes > 1 else "")
        return said + (f" + {self.audit_h:.3f} deliverables audit {note(self.audit.said())}" if self.audit else "")


def _h(hours: float) -> str:
    return f"{hours:.3f} h" if hours < 10 else f"{hours:,.1f} h"


@dataclass(frozen=True)
class Delivery:
    """How the deliverables run: how many side by side, that assumption in words, and the corpora one child takes."""

    streams: int = 1
    streams_note: str = "one deliverable after another"
    per_child: int | None = None  # deliverables.per_child (None: all of a stream's)
    lanes: int = 1  # the configuration's lanes: above 1, a fresh child per corpus (`gpucost deliver`)
    audit: Audit | None = None  # deliverables.audit, sized from the reference variant's passes


def forecast(plan: dict, expected_deliverables: int, durations: Durations, medians: dict,
             attempts: tuple[Span, ...], estimated: int = 0, delivery: Delivery = Delivery()) -> Forecast | None:
    """The forecast from the plan's assumptions and the measurements; None without a completed pass to size it."""
    if not durations.values:
        return None
    streams, per_child = max(1, delivery.streams), delivery.per_child
    shape_s = medians.get(SHAPE_SETUP_S, 0.0)
    startup_s = medians.get(LOAD_S, 0.0) + medians.get(WARMUP_S, 0.0) + shape_s
    shape = Forecast(0, 0, 0, 0, 0, 0, 0, expected_deliverables, (0, 0, 0), streams=streams, per_child=per_child,
                     lanes=delivery.lanes)
    after_s = medians.get(EVAL_S, 0.0) + medians.get(EXPORT_S, 0.0)
    return Forecast(
        setup_h=float(plan["setup_hours"]),
        waiting_h=float(plan["waiting_hours"]),
        comparisons_h=union_seconds(attempts) / 3600,
        comparisons=len(attempts),
        comparisons_estimated=estimated,
        restarts=int(plan["planned_restarts"]),
        startup_h=(shape.children(expected_deliverables) + plan["planned_restarts"]) * startup_s / 3600,
        deliverables=expected_deliverables,
        per_deliverable_h=tuple((value + after_s) / 3600
                                for value in (durations.minimum, durations.median, durations.maximum)),
        comparisons_sum_h=sum_seconds(attempts) / 3600,
        streams=streams,
        streams_note=delivery.streams_note,
        conversion_h=medians.get(CONVERT_S, 0.0) / 3600,
        per_child=per_child,
        startup_each_h=startup_s / 3600,
        shape_setup_each_h=shape_s / 3600,
        lanes=delivery.lanes,
        audit=delivery.audit,
    )
