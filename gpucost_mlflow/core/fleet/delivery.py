"""A delivery fleet (`gpucost fleet deliver`): the decision it delivers, whether it may be delivered, each worker's
share of the corpora, the key that keeps a corpus from being delivered twice, and the completeness check at the end.

Pure: plain records in, plain records out. The split is SkyPilot's own: one task launched as as many managed jobs as
the plan rents lots, each told its rank (`SKYPILOT_JOB_RANK`) and the count (`SKYPILOT_NUM_JOBS`); a worker's share
is every corpus whose position in name order is its rank modulo the count, so the shares partition the corpora.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal

from gpucost_mlflow.core.errors import GpucostError

MAX_TRIES = 2  # a corpus that fails is retried at most once; a preempted attempt is no failure of the corpus
RETRY_EXIT = 75  # the worker's exit when a corpus failed its first try: SkyPilot restarts it (recover_on_exit_codes)
JOB_RANK = "SKYPILOT_JOB_RANK"  # SkyPilot sets both in every managed job of `sky.jobs.launch(..., num_jobs=N)`
NUM_JOBS = "SKYPILOT_NUM_JOBS"
UNDECIDED = "undecided"  # core/money/choice.py's Choice.none for a close call


@dataclass(frozen=True)
class Decision:
    """What a delivery fleet delivers, read from the report's decision: the configuration to run (of a tie, the one
    `choice.to_run` puts first), its device and SkyPilot accelerator, the plan's lots and offer, the committed cost
    (the plan at the slowest pass, setup included, under the offer's billing terms) and the forecast window."""

    experiment: str
    variant: str
    device: str
    accelerator: str
    gpus_per_lot: int
    lots: int
    provider: str
    region: str
    instance: str
    committed: Decimal
    currency: str
    forecast_hours: Decimal
    plan: str
    decision_id: str  # the decision run it serves (or, before one is logged, the configuration's name)
    spread: float = 1.5  # the protocol's max_spread_ratio: a forecast missed by more than it says so
    deadline: str = ""  # the protocol's deadline (ISO), '' without one

    @property
    def accelerators(self) -> str:
        return f"{self.accelerator}:{self.gpus_per_lot}"

    def worst_line(self) -> str:
        """The worst case printed before any launch."""
        return (f"worst case {self.committed} {self.currency}: {self.plan} ({self.variant} on {self.device}, "
                f"{self.lots} worker{'s' if self.lots != 1 else ''} of {self.accelerators}; the plan at the slowest "
                f"pass, setup included, under the offer's billing terms; window {self.forecast_hours:.2f} h)")


def refuse(decision_text: str, none: str, confirmed: str | None, confirm_command: str) -> None:
    """One line, exit 2, when there is nothing to deliver: no decision, an undecided one, or a chosen configuration
    not confirmed (naming the command that confirms it). `confirmed`: the chosen one's verdict (None: no decision)."""
    if none == UNDECIDED:
        raise GpucostError(f"the decision is undecided, nothing to deliver: {decision_text}; nothing launched")
    if confirmed is None:
        raise GpucostError(f"no decision to deliver: {decision_text}; nothing launched")
    if confirmed != "confirmed":
        raise GpucostError(f"the chosen configuration is {confirmed}: `{confirm_command}` confirms it before it is "
                           "delivered; nothing launched")


def check_budget(decision: Decision, max_cost: Decimal) -> None:
    """Refuse, in one line, a delivery whose worst case exceeds --max-cost."""
    if decision.committed > max_cost:
        raise GpucostError(f"the delivery's worst case {decision.committed} {decision.currency} exceeds --max-cost "
                           f"{max_cost} {decision.currency} ({decision.plan}); nothing launched")


def share(names: list[str], rank: int, workers: int) -> list[str]:
    """The corpora of worker `rank` of `workers`: every one whose position in name order is its rank modulo the
    count (the shares of every rank partition the corpora)."""
    if workers < 1 or not 0 <= rank < workers:
        raise GpucostError(f"worker rank {rank} of {workers}: SkyPilot gives each of N jobs a rank from 0 to N-1")
    return [name for position, name in enumerate(sorted(names)) if position % workers == rank]


def key(fingerprint: str, decision_id: str) -> str:
    """A deliverable's key: its corpus's fingerprint and the decision it serves (a corpus delivered once per
    decision, whichever worker and attempt delivered it)."""
    return hashlib.sha256(f"{fingerprint}\n{decision_id}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Completeness:
    """The end check: every input id of every corpus delivered exactly once; else which corpora are missing or
    delivered more than once."""

    missing: tuple[str, ...]
    twice: tuple[str, ...]
    short: tuple[str, ...]  # delivered, but not every input id exactly once

    @property
    def complete(self) -> bool:
        return not (self.missing or self.twice or self.short)


def completeness(expected: dict[str, tuple[str, ...]], delivered: dict[str, list[tuple[str, ...]]]) -> Completeness:
    """`expected`: each corpus's input ids by its name; `delivered`: per corpus, the ids of each accepted deliverable
    recorded for it."""
    missing = tuple(sorted(name for name in expected if not delivered.get(name)))
    twice = tuple(sorted(name for name, runs in delivered.items() if len(runs) > 1))
    short = tuple(sorted(name for name, runs in delivered.items() if len(runs) == 1 and name in expected
                         and sorted(runs[0]) != sorted(expected[name])))
    return Completeness(missing, twice, short)


ACCEPTED, RUNNING, FAILED, INTERRUPTED = "accepted", "running", "failed", "interrupted"


@dataclass(frozen=True)
class Attempt:
    """One deliverable run of a fleet, as its status counts it: its corpus, the worker that ran it, and how it stands
    (accepted, running, failed, or interrupted: its machine was lost, which is no failure of the corpus)."""

    corpus: str
    worker: str
    outcome: str


def failures(attempts: list[Attempt], corpus: str) -> int:
    """The corpus's failed tries (interruptions left out: a lost machine is not the corpus failing)."""
    return sum(a.corpus == corpus and a.outcome == FAILED for a in attempts)


@dataclass(frozen=True)
class Tally:
    """One worker's corpora: delivered (accepted), running, failed (its tries that failed), interrupted (lost with
    its machine), and of its share those not delivered by anyone yet."""

    done: int
    running: int
    failed: int
    interrupted: int
    left: int

    def line(self) -> str:
        return (f"corpora {self.done} done, {self.running} running, {self.failed} failed"
                + (f" ({self.interrupted} interrupted by a lost machine, delivered again)" if self.interrupted else "")
                + f", {self.left} of its share left")


def tally(shares: dict[str, list[str]], attempts: list[Attempt]) -> dict[str, Tally]:
    """Each worker's tally, by the worker each attempt ran on."""
    accepted = {a.corpus for a in attempts if a.outcome == ACCEPTED}
    found = {}
    for name, share in shares.items():
        mine = [a for a in attempts if a.worker == name]
        found[name] = Tally(*(sum(a.outcome == outcome for a in mine) for outcome in (ACCEPTED, RUNNING, FAILED,
                                                                                       INTERRUPTED)),
                            left=sum(corpus not in accepted for corpus in share))
    return found


def failed_named(attempts: list[Attempt]) -> list[str]:
    """Every corpus with a failed try, named with what became of it: retried and delivered, failed twice and not
    retried again, or waiting for its one retry."""
    said = []
    for corpus in sorted({a.corpus for a in attempts if a.outcome == FAILED}):
        mine = [a for a in attempts if a.corpus == corpus]
        on = ", ".join(dict.fromkeys(a.worker for a in mine if a.outcome == FAILED))
        done = [a.worker for a in mine if a.outcome == ACCEPTED]
        if done:
            said.append(f"{corpus} (failed on {on}; retried once, delivered on {done[0]})")
        elif failures(attempts, corpus) >= MAX_TRIES:
            said.append(f"{corpus} (failed on {on}, twice: not retried again)")
        else:
            said.append(f"{corpus} (failed on {on}; retried once when SkyPilot restarts its worker)")
    return said


def ratio(realized: Decimal | None, forecast: Decimal | None) -> float | None:
    """Realized over forecast, None when either is unknown or the forecast is 0."""
    if realized is None or not forecast:
        return None
    return float(realized / forecast)
