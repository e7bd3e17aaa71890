"""Report figures (matplotlib's object API, no pyplot state) as PNG bytes, shown as data URIs in report.html and
written as files next to it: committed cost against volume first, then every pass's duration, then memory peaks.
Configurations carry their short names (report/short.py), the same as in the decision card."""

from __future__ import annotations

import base64
import functools
import io
import statistics
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from matplotlib.figure import Figure as Drawing
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.curve import Step
from gpucost_mlflow.core.money.decided import Decision
from gpucost_mlflow.core.money.decision import Assessment
from gpucost_mlflow.core.names import STEADY_LAP
from gpucost_mlflow.report import short, standing
from gpucost_mlflow.report.tables import Summary
from gpucost_mlflow.tracking import schema

COST_VOLUME_ALT = "Committed cost against volume"
COST_VOLUME_FILE = schema.COST_VOLUME_FIGURE
DURATIONS_FILE = schema.DURATIONS_FIGURE
MEMORY_FILE = schema.MEMORY_FIGURE
FAR_MADS = 3.0  # a duration further than this many median absolute deviations from its median is an outlier ...
FAR_SHARE = 0.10  # ... and further than this share of the median (five equal passes have no deviation at all)
JITTER = 0.07  # vertical offset between one configuration's dots, so five equal durations stay five dots
# Per standing: colour, marker and whether the marker is hollow (under-sampled: too few passes to count).
STYLES = {standing.CHOSEN: ("#2ca02c", "o", False), standing.TIED: ("#2ca02c", "D", False),
          standing.EQUAL: ("#2ca02c", "D", True), standing.COSTS_MORE: ("#1f77b4", "o", False),
          standing.SAME_COST: ("#7f7f7f", "o", False),
          standing.UNDECIDED: ("#ff7f0e", "o", False), standing.INFEASIBLE: ("#d62728", "x", False),
          standing.LATE: ("#8c564b", "v", False), standing.UNSTABLE: ("#e377c2", "s", False),
          standing.NOT_PRICED: ("#bcbd22", "x", False),
          standing.UNDER_SAMPLED: ("#9467bd", "o", True), standing.LEFT_OUT: ("#7f7f7f", "x", False),
          standing.RACED: ("#9467bd", "s", True),
          standing.NOT_CONFIRMED: ("#d62728", "s", True), standing.NOT_SHOWN: ("#d62728", "o", True)}
TIED_SHADES = ("#2ca02c", "#0b5d1e", "#8fd18a")  # tied lines share their standing's green, told apart by shade
# The memory figure's legend: each counter in words with its unit, never its metric name (mem_peak_rss_bytes).
COUNTER_WORDS = {"mem_peak_allocated_bytes": "peak device memory allocated (MiB)",
                 "mem_peak_reserved_bytes": "peak device memory reserved (MiB)",
                 "mem_peak_rss_bytes": "peak resident memory, RSS (MiB)"}


@dataclass(frozen=True)
class Figure:
    """One figure: its alt text (what it shows, in words), caption, drawing and the file it is written to next to
    report.html ('' when shown inline only). The drawing becomes PNG bytes when first read: laying out and encoding
    is nine tenths of a figure's cost, and a report read as Markdown needs only the alt text and file name."""

    alt: str
    caption: str
    drawing: Drawing
    file: str = ""

    @functools.cached_property
    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.drawing.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
        return buffer.getvalue()

    @property
    def uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _axes(width: float, height: float):
    """A drawing of that size in inches and its one axes (no pyplot: nothing to close, freed with the report)."""
    drawing = Drawing(figsize=(width, height))
    return drawing, drawing.subplots()


def outliers(values: tuple[float, ...]) -> tuple[int, ...]:
    """Positions of the durations far from their configuration's median: beyond FAR_MADS median absolute
    deviations and beyond FAR_SHARE of the median."""
    if len(values) < 3:
        return ()
    middle = statistics.median(values)
    spread = statistics.median(abs(v - middle) for v in values)
    return tuple(i for i, v in enumerate(values)
                 if abs(v - middle) > FAR_MADS * spread and abs(v - middle) > FAR_SHARE * middle)


def _dots(axes, values: tuple[float, ...], ys: list[float], role: str) -> None:
    """One configuration's passes in the style of its standing."""
    colour, marker, hollow = STYLES[role]
    if marker == "x":
        axes.scatter(values, ys, marker=marker, s=36, zorder=3, color=colour)
    else:
        axes.scatter(values, ys, marker=marker, s=36, zorder=3, facecolors="none" if hollow else colour,
                     edgecolors=colour)


def durations(assessments: list[Assessment], choice: Choice, names: short.Names) -> Figure:
    """Every pass's duration per configuration as dots, coloured by standing, the median as a bar, outliers ringed
    and named by their run."""
    shown = standing.ordered(assessments, choice)
    figure, axes = _axes(7, 0.9 + 0.42 * max(1, len(shown)))
    named = []
    for row, a in enumerate(shown):
        c, y = a.configuration, len(shown) - 1 - row
        values = c.durations.values
        ys = [y + (i - (len(values) - 1) / 2) * JITTER for i in range(len(values))]
        _dots(axes, values, ys, standing.role(a, choice))
        if values:
            axes.plot([c.durations.median] * 2, [y - 0.3, y + 0.3], color="#222", linewidth=1.5, zorder=2)
        for i in outliers(values):
            run = c.pass_runs[i][:8] if i < len(c.pass_runs) else f"pass {i + 1}"
            axes.scatter([values[i]], [ys[i]], s=160, facecolors="none", edgecolors="#222", linewidths=1.2, zorder=4)
            axes.annotate(run, (values[i], ys[i]), xytext=(6, 6), textcoords="offset points", fontsize=8)
            named.append(run)
    axes.set_yticks(range(len(shown)), [f"{names.of(a.configuration)}" for a in reversed(shown)])
    axes.set_ylim(-0.7, len(shown) - 0.3)
    axes.set_xlabel(f"{STEADY_LAP} (s): the median of each pass's laps after the first")
    axes.set_title(f"Every pass's {STEADY_LAP} (bar: median)", fontsize=11)
    axes.grid(axis="x", alpha=0.3)
    kinds = list(dict.fromkeys(standing.role(a, choice) for a in shown))
    handles = [Line2D([], [], linestyle="", marker=STYLES[k][1], color=STYLES[k][0],
                      markerfacecolor="none" if STYLES[k][2] else STYLES[k][0], label=k) for k in kinds]
    if named:
        handles.append(Line2D([], [], linestyle="", marker="o", markersize=11, markerfacecolor="none",
                              markeredgecolor="#222", label="outlier (run named)"))
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    counts = ", ".join(f"{sum(standing.role(a, choice) == k for a in shown)} {k}" for k in kinds)
    alt = (f"Every pass's {STEADY_LAP} per configuration: {counts}"
           + (f"; outliers {', '.join(named)}" if named else "; no outlier"))
    return Figure(alt, f"Every pass's {STEADY_LAP} per configuration "
                       "(bar: median; ringed: an outlier, named by its run)",
                  figure, DURATIONS_FILE)


def _polylines(curve: list[Step], high: int) -> list[tuple[bool, list[float], list[float]]]:
    """The step curve as (in time, xs, ys) pieces, a new piece wherever the deadline standing changes."""
    pieces: list[tuple[bool, list[float], list[float]]] = []
    for index, step in enumerate(curve):
        end = curve[index + 1].volume if index + 1 < len(curve) else high
        cost = float(step.cost)
        if not pieces or pieces[-1][0] != step.in_time:
            pieces.append((step.in_time, [step.volume], [cost]))
        else:
            pieces[-1][1].append(step.volume)
            pieces[-1][2].append(cost)
        pieces[-1][1].append(end)
        pieces[-1][2].append(cost)
    return pieces


def _curves(axes, group: list[Assessment], decision: Decision, names: short.Names, high: int) -> float:
    """Each drawn configuration's step curve, solid in time and dashed late; returns the highest cost drawn."""
    top, tied = 0.0, 0
    for a in group:
        role = standing.role(a, decision.choice)
        colour = TIED_SHADES[tied % len(TIED_SHADES)] if role == standing.TIED else STYLES[role][0]
        tied += role == standing.TIED
        curve = decision.curve(a).steps
        top = max([top] + [float(step.cost) for step in curve])
        label = f"{names.of(a.configuration)} ({role})"
        for in_time, xs, ys in _polylines(curve, high):
            axes.plot(xs, ys, drawstyle="steps-post", color=colour, linewidth=1.8 if a is group[0] else 1.3,
                      linestyle="-" if in_time else "--", label=label or None)
            label = ""
    return top


def _marks(axes, decision: Decision, volume: int) -> list[str]:
    """The declared volume as a dotted line, each break-even of the chosen one as a point on its curve; returns the
    break-even volumes marked."""
    axes.axvline(volume, color="#444", linestyle=":", linewidth=1)
    axes.annotate(f"declared {volume:,}", (volume, 1), xycoords=("data", "axes fraction"), xytext=(3, -12),
                  textcoords="offset points", fontsize=8)
    marked = []
    for at, amount in decision.marks:
        cost = float(amount)
        axes.plot([at], [cost], marker="D", color="#222", markersize=5, zorder=4)
        axes.annotate(f"break-even {at:,}", (at, cost), xytext=(4, -12), textcoords="offset points", fontsize=8)
        marked.append(f"{at:,}")
    return marked


def _nothing_drawn(decision: Decision) -> str:
    """Why no curve is drawn: nothing priced, or nothing priced that can be committed to (each other configuration
    infeasible, unstable or late: its price is withheld, report/standing.py)."""
    if any(decision.curve(a) is not None and standing.withheld(a, decision.choice) for a in decision.assessments):
        return "nothing priced that can be committed to"
    return "nothing priced"


def cost_volume(decision: Decision, names: short.Names) -> Figure:
    """Committed cost against volume (log volume axis): a step line per configuration drawn (chosen, tied, runner-up,
    those at the nearest break-evens, the fastest left out), dashed where its slowest-pass forecast misses the
    deadline; the declared volume and the break-evens of the chosen one marked (each read from the decision)."""
    volume, choice = decision.volume, decision.choice
    group = standing.drawn(decision)
    figure, axes = _axes(7, 3.8)
    if not group or volume is None:
        why = "no declared volume" if volume is None else _nothing_drawn(decision)
        axes.text(0.5, 0.5, f"{why}: no committed cost to draw", ha="center", va="center", transform=axes.transAxes)
        axes.set_axis_off()
        return Figure(f"{COST_VOLUME_ALT}: {why}, no committed cost to draw", f"{COST_VOLUME_ALT}: {why}",
                      figure, COST_VOLUME_FILE)
    currency, high = group[0].currency, decision.curve(group[0]).span
    top = _curves(axes, group, decision, names, high)
    marked = _marks(axes, decision, volume)
    axes.set_xscale("log")
    axes.set_xlim(1, high)
    axes.set_ylim(bottom=0)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.2f}" if top < 10 else f"{v:,.0f}"))
    axes.set_xlabel("expected deliverables (corpora, log scale)")
    axes.set_ylabel(f"committed cost ({currency})")
    axes.set_title("Committed cost against volume (dashed: misses the deadline)", fontsize=11)
    axes.grid(which="major", alpha=0.3)
    axes.legend(loc="upper left", fontsize=8, frameon=False)
    drawn = ", ".join(f"{names.of(a.configuration)} ({standing.role(a, choice)})" for a in group)
    alt = (f"{COST_VOLUME_ALT} ({currency}; volume on a log scale) for {drawn}; declared volume {volume:,}"
           + (f"; break-evens at {', '.join(marked)}" if marked else "; no break-even in range"))
    return Figure(alt, f"{COST_VOLUME_ALT}: the plan covering the slowest-pass forecast at each volume; dashed "
                       "where the forecast misses the deadline", figure, COST_VOLUME_FILE)


NOT_MEASURED = "not measured"  # a configuration's slot in the memory figure when it recorded no peak: never a 0 MiB bar


def unmeasured(summary: Summary) -> str:
    """Why a configuration has no memory peak to draw: what its counter said ('none: ...'), else that no pass of it
    recorded one."""
    said = [part.strip().removeprefix("none:").strip() for part in summary.memory_counter.split("; ")
            if part.strip().startswith("none:")]
    return "; ".join(said) or "no pass of it recorded a peak"


def memory(summaries: list[Summary], names: short.Names) -> Figure:
    """Peak memory per configuration and counter (counters side by side, never added); a configuration that recorded
    no peak is no bar (never one of 0 MiB) but "not measured" at its place, and the figure says why."""
    figure, axes = _axes(7, 3.2)
    counters = sorted({key for s in summaries for key in s.memory})
    width = 0.8 / max(1, len(counters))
    why = [f"{names.of(s.configuration)}: {unmeasured(s)}" for s in summaries if not s.memory]
    said = f"{NOT_MEASURED}: {'; '.join(why)}"
    axes.set_title("Peak memory (largest over passes)")
    if not counters:
        axes.set_axis_off()
        axes.text(0.5, 0.5, "No memory peak recorded: no bar to draw.\n" + textwrap.fill(said, 90), ha="center",
                  va="center", fontsize=9, transform=axes.transAxes)
        return Figure(f"Peak memory per configuration and counter: none recorded ({said})",
                      "Peak memory per configuration and counter", figure, MEMORY_FILE)
    for k, counter in enumerate(counters):
        shown = [(i + k * width, s.memory[counter] / 2**20) for i, s in enumerate(summaries) if counter in s.memory]
        axes.bar([x for x, _ in shown], [y for _, y in shown], width=width,
                 label=COUNTER_WORDS.get(counter, f"{counter} (MiB)"))
    centre = width * (len(counters) - 1) / 2
    for i in (i for i, s in enumerate(summaries) if not s.memory):
        axes.text(i + centre, 0, NOT_MEASURED, rotation=90, ha="center", va="bottom", fontsize=7, color="#7f7f7f")
    axes.set_xticks([i + centre for i in range(len(summaries))],
                    [names.of(s.configuration) for s in summaries], rotation=20, ha="right")
    axes.set_xlim(centre - 0.6, len(summaries) - 0.4 + centre)
    axes.set_ylabel("MiB")
    axes.legend(loc="best", fontsize=8)
    if why:
        axes.set_xlabel(textwrap.fill(said, 100), fontsize=7, color="#555")
    alt = "Peak memory per configuration and counter" + (f" ({said})" if why else "")
    return Figure(alt, "Peak memory per configuration and counter", figure, MEMORY_FILE)


def for_report(summaries: list[Summary], decision: Decision) -> dict[str, Figure]:
    """The report's figures by key: cost against volume, durations, memory."""
    names = short.names([a.configuration for a in decision.assessments])
    return {"cost_volume": cost_volume(decision, names),
            "durations": durations(list(decision.assessments), decision.choice, names),
            "memory": memory(summaries, names)}


class Drawn(Mapping):
    """The report's figures, drawn the first time one is read (writing or rendering the report), once: a report
    model read for its tables alone never pays for matplotlib."""

    def __init__(self, draw: Callable[[], dict[str, Figure]]):
        self._draw, self._figures = draw, None

    def _drawn(self) -> dict[str, Figure]:
        if self._figures is None:
            self._figures = self._draw()
        return self._figures

    def __getitem__(self, key: str) -> Figure:
        return self._drawn()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._drawn())

    def __len__(self) -> int:
        return len(self._drawn())
