"""The race a protocol may declare (`race: {from_round: N}`, locked with it): a configuration stops being measured
once more passes cannot make it the choice. Pure: assessments in, stops out.

Three reasons, each said in the stop's line (docs/campaign.md, "The race"):
- rejected for good, after any round: a rejection more passes cannot change (a quality bar failed by a deterministic
  workload, whose next pass gives the same outputs, or a variant not comparable with the reference); never a bar not
  shown, a failure, an out-of-memory or an interruption;
- dominated whatever the noise, from round `from_round` on: with its slowest pass at its fast end it commits more
  than the best candidate commits with its slowest pass at its slow end: the noise rule of the decision
  (core/money/choice.py `_noise_priced`, `_plan_at`: a configuration priced at another slowest pass) with each side
  at its plausible extreme, so that no pass still to come can bring them to one price or leave them unseparated;
- late whatever the noise, from round `from_round` on: with its slowest pass at its fast end its forecast still ends
  after the deadline.

The plausible ends of a configuration's passes: its fastest pass or the lower end of the one-sided prediction interval
of one more pass, whichever is faster (the fast end); its slowest pass or that interval's upper end, whichever is
slower (the slow end, what the committed plan would cover). The interval is Student's t on the log-durations, their
spread pooled over every configuration of the race, read at the race's per-look confidence (the protocol's confidence
shared over the rounds a stop may follow, core/measurement/stats.py `per_look`, as a second stage shares it over two
looks), shared again over the passes each configuration still has to run. With no spread measured yet (one pass
each), or durations the clock cannot time (a measured part under a second: the decision cannot separate them either),
nothing is dominated or late whatever the noise.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from gpucost_mlflow.core.judging.bounds import FAILED
from gpucost_mlflow.core.judging.like_for_like import NOT_COMPARABLE
from gpucost_mlflow.core.measurement.stats import DEFAULT_CONFIDENCE, per_look
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.core.money.decision import Assessment, measured_there
from gpucost_mlflow.core.money.feasibility import NOT_COUNTED
from gpucost_mlflow.core.money.plans import covering_plans, to_hours

FOR_GOOD = "rejected for good"
DOMINATED = "dominated whatever the noise"
LATE = "late whatever the noise"


@dataclass(frozen=True)
class Race:
    """The protocol's race: the round from which dominance and lateness stop a configuration, the passes each
    configuration runs at most, and the protocol's confidence."""

    from_round: int
    passes: int
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def looks(self) -> int:
        """The rounds a stop for dominance or lateness may be made after: from `from_round` to the one before the
        last (after the last nothing is left to save); at least one."""
        return max(1, self.passes - self.from_round)

    @property
    def level(self) -> float:
        """The confidence each of those looks reads a fast end at: the protocol's, shared over them."""
        return per_look(self.confidence, self.looks)


@dataclass(frozen=True)
class Runner:
    """One configuration in the race: its assessment so far, the quality verdict of each of its rejected passes and
    whether its workload is deterministic (what its passes record as `seed.workload_deterministic`)."""

    assessment: Assessment
    rejections: tuple[str, ...] = ()
    deterministic: bool = True


@dataclass(frozen=True)
class Stop:
    """A configuration the race stops: its variant and device, the passes it ran and why, each said in its line and
    recorded on its last pass."""

    variant: str
    device: str
    passes: int  # its attempts that count: neither interrupted nor excluded
    reason: str  # 'dominated whatever the noise: at best 2.40 USD against 1.10 USD (...)'

    def line(self) -> str:
        """'stopped batch1 after 2 passes: dominated whatever the noise: at best 1.20 USD against 0.60 USD ...'."""
        return f"stopped {self.variant} after {self.passes} pass{'es' if self.passes != 1 else ''}: {self.reason}"


@dataclass(frozen=True)
class Ends:
    """A configuration's plausible fastest and slowest pass, in seconds."""

    fast: float
    slow: float


@dataclass(frozen=True)
class Noise:
    """The spread of one pass's duration about its configuration's, pooled over the race: the standard deviation of
    the log-durations and its degrees of freedom (0: no configuration has two passes yet)."""

    sd: float
    df: int


def worst_case_passes(configs: int, passes: int, from_round: int | None) -> int:
    """The passes a campaign of `configs` configurations runs under the race when every configuration but the best
    stops at its first look (round `from_round`) and the best runs its full `passes`: the fewest it can run, what a
    budget with the race assumes. Without a race (None), or one that looks no earlier than the last round, every
    configuration runs its `passes`."""
    if configs <= 0:
        return 0
    if from_round is None or from_round >= passes:
        return configs * passes
    return (configs - 1) * from_round + passes


def for_good(runner: Runner) -> str:
    """The rejection more passes cannot change ('' when none): a variant not comparable with the reference (it asks
    other work), or a failed quality bar of a deterministic workload (its next pass gives the same outputs)."""
    for verdict in runner.rejections:
        if verdict.startswith(NOT_COMPARABLE):
            return f"{FOR_GOOD}: {verdict}"
        if runner.deterministic and verdict.startswith(FAILED):
            return f"{FOR_GOOD}: quality {verdict} (a deterministic workload: its next pass gives the same outputs)"
    return ""


def noise(assessments: Sequence[Assessment]) -> Noise:
    """The log-durations' spread about each configuration's own mean, pooled over the configurations with two passes
    or more."""
    squares, df = 0.0, 0
    for a in assessments:
        logs = [math.log(v) for v in a.configuration.durations.values if v > 0]
        if len(logs) > 1:
            mean = sum(logs) / len(logs)
            squares += sum((x - mean) ** 2 for x in logs)
            df += len(logs) - 1
    return Noise(math.sqrt(squares / df) if df else math.inf, df)


def ends(values: Sequence[float], spread: Noise, level: float, more: int) -> Ends | None:
    """A configuration's plausible ends: its fastest and slowest passes, widened to the one-sided prediction interval
    of one more pass at `level` shared over the `more` passes it still has to run; None without a measured spread or
    a pass."""
    durations = [v for v in values if v > 0]
    if not durations or spread.df < 1:
        return None
    from scipy.stats import t  # deferred: scipy's import costs more than the rest of the rule

    mean = sum(math.log(v) for v in durations) / len(durations)
    width = float(t.ppf(1 - (1 - level) / max(more, 1), spread.df)) * spread.sd * math.sqrt(1 + 1 / len(durations))
    return Ends(min(min(durations), math.exp(mean - width)), max(max(durations), math.exp(mean + width)))


def best_candidate(assessments: Sequence[Assessment]) -> Assessment | None:
    """The configuration the decision would commit to were every one sampled now: feasible so far (under-sampled at
    most, never stopped), priced, stable and not late at its slowest pass; the cheapest, then the faster median."""
    found = [a for a in assessments if (a.feasible or a.under_sampled) and a.plan is not None and a.stable
             and a.meets_deadline is not False and not a.configuration.stopped]
    return min(found, key=lambda a: (a.committed, a.configuration.durations.median, a.configuration.name),
               default=None)


def _slowest_at(a: Assessment, seconds: float):
    """Its forecast with its slowest deliverable's pass taking `seconds`, and that deliverable's hours."""
    f = a.forecast
    slowest_h = f.per_deliverable_h[2] + (seconds - a.configuration.durations.maximum) / 3600
    return replace(f, per_deliverable_h=(f.per_deliverable_h[0], f.per_deliverable_h[1], slowest_h)), slowest_h


def committed_at(a: Assessment, seconds: float) -> Decimal | None:
    """What it would commit to had its slowest pass taken `seconds`: the cheapest plan of every row of its device that
    may price it (a row that refuses its slowest window may cover a faster one); None when none covers it."""
    if a.rules is None or a.forecast is None:
        return None
    forecast, slowest_h = _slowest_at(a, seconds)
    offers, _ = measured_there(a.rules.catalog.for_device(a.configuration.device), a.configuration)
    plans = covering_plans(offers, to_hours(forecast.high_hours), a.configuration.gpus, slowest_h, a.work)
    return plans[0].total if plans else None


def dominated(a: Assessment, fast_s: float, best: Assessment, slow_s: float) -> str:
    """Why it is dominated whatever the noise ('' when it is not): with its slowest pass at its fast end (`fast_s`) it
    commits more than the best candidate with its slowest pass at its slow end (`slow_s`)."""
    at_best, theirs = committed_at(a, fast_s), committed_at(best, slow_s)
    if at_best is None or theirs is None or at_best <= theirs:
        return ""
    return (f"{DOMINATED}: at best {money(at_best, best.currency)} against {money(theirs, best.currency)} "
            f"({best.configuration.name} at its slowest plausible pass)")


def late(a: Assessment, fast_s: float) -> str:
    """Why it misses the deadline whatever the noise ('' when it may not): with its slowest pass at its fast end its
    forecast still ends after the deadline."""
    start = ((a.rules.plan or {}).get("start") if a.rules else None)
    if a.forecast is None or start is None or a.rules.deadline is None:
        return ""
    forecast, _ = _slowest_at(a, fast_s)
    end = start + dt.timedelta(hours=forecast.high_hours)
    if end <= a.rules.deadline:
        return ""
    return (f"{LATE}: at best its forecast ends {end.isoformat(timespec='minutes')}, after the deadline "
            f"{a.rules.deadline.isoformat(timespec='minutes')}")


def counted(a: Assessment) -> int:
    """The passes a configuration ran that count (an interrupted or excluded one does not)."""
    return len([s for s in a.configuration.statuses if s not in NOT_COUNTED])


def stops(runners: Sequence[Runner], others: Sequence[Assessment], race: Race, round_: int) -> list[Stop]:
    """The configurations of the race (`runners`) to stop after round `round_`, each with why: rejected for good
    after any round, dominated or late whatever the noise from `from_round` on; none after the last round. `others`:
    the experiment's configurations outside the race (another campaign's, another device's), candidates too. A
    configuration already stopped is not stopped again."""
    if round_ >= race.passes:
        return []
    everyone = [r.assessment for r in runners] + list(others)
    best, spread, more = best_candidate(everyone), noise(everyone), race.passes - round_
    timed_best = best is not None and not best.configuration.too_short
    top = ends(best.configuration.durations.values, spread, race.level, more) if timed_best else None
    found = []
    for runner in runners:
        a = runner.assessment
        if a.configuration.stopped:
            continue
        why = for_good(runner)
        timed = round_ >= race.from_round and not a.configuration.too_short and a.forecast is not None
        mine = ends(a.configuration.durations.values, spread, race.level, more) if timed else None
        if not why and mine is not None:
            why = late(a, mine.fast) or (dominated(a, mine.fast, best, top.slow) if top is not None and best is not a
                                         else "")
        if why:
            found.append(Stop(a.configuration.variant, a.configuration.device, counted(a), why))
    return found
