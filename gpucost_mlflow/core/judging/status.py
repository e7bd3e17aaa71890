"""The statuses of an attempt, one vocabulary for the child's outcome, the judge, the writer, the reader and the report.

A `str` enum: a member equals its value, so a status read back from an MLflow tag compares with it directly, and
`str()` / f-strings give the bare value that is written. MLflow's own run states (RUNNING, FINISHED, FAILED,
KILLED) are the store's vocabulary, not this one.
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """What became of one attempted pass (and, COMPLETED, of the child's run of the corpus before it is judged)."""

    ACCEPTED = "accepted"  # every check passed: a validated result
    REJECTED = "rejected"  # a check or the quality bar failed: a result, kept as its row
    PENDING = "pending"  # complete, waiting for its reference to be judged against
    FAILED = "failed"  # did not complete the corpus (out of memory, a crash, interrupted)
    EXCLUDED = "excluded"  # set aside for a documented external cause (timings only)
    RUNNING = "running"  # its run is open
    INTERRUPTED = "interrupted"  # failed because its launcher stopped: no result of the configuration
    COMPLETED = "completed"  # the child's outcome: the whole corpus processed, not judged yet

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


JUDGED = (Status.ACCEPTED, Status.REJECTED, Status.PENDING)  # verdicts of a completed pass
EXCLUDABLE = (Status.ACCEPTED, Status.PENDING)  # statuses whose timing, not verdict, an exclusion may set aside
OUT_OF_MEMORY = "out of memory"  # how a failed pass's reason starts when its batch did not fit (PROTOCOL.md §5)
KILLED = "killed by signal"  # in a failed pass's reason when its child was killed by a signal it did not raise


def excludable_failure(reason: str, contended: str) -> bool:
    """A failed pass whose cause may lie outside the configuration (PROTOCOL.md §6): its child killed by a signal,
    or the pass flagged contended while it ran; never one that ran out of memory (the configuration's own limit)."""
    reason = str(reason or "")
    return not reason.startswith(OUT_OF_MEMORY) and (KILLED in reason or bool(contended))


def interrupted(status: str, reason: str) -> bool:
    """A failed attempt whose launcher stopped (Ctrl-C, gone, silent heartbeat): the reader's reason says so."""
    return status == Status.FAILED and str(reason).startswith(Status.INTERRUPTED.value)
