"""Whether a configuration can be chosen at all: every attempt that counts completed the corpus with every check
passed, with the protocol's passes, and not stopped by the protocol's race; else why not, in one line. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.stats import under_sampled

if TYPE_CHECKING:  # annotations only: decision.py reads this module
    from gpucost_mlflow.core.money.decision import Configuration

NOT_COUNTED = (Status.EXCLUDED, Status.INTERRUPTED)  # neither a result of the configuration nor a countable pass


QUALITY_NOT_SHOWN = "quality not shown"  # a configuration whose only rejections are bars its corpus could not show
STOPPED = "stopped by the race"  # measured and out: the protocol's race stopped it (core/campaign/race.py)


def feasibility(config: Configuration, required: int | None = None) -> tuple[bool, str]:
    """Eligible only if it completed the whole corpus with every check passed in every attempt that counts (not
    excluded, not interrupted by its launcher: a resume runs that slot again), and (given the protocol's
    passes_per_variant) with at least that many countable passes; under a protocol's seeds, only when each seed's own
    passes are (`seeds_missing` names those that are not)."""
    counted = [s for s in config.statuses if s not in NOT_COUNTED]
    interrupted = config.statuses.count(Status.INTERRUPTED)
    besides = f"; {interrupted} interrupted attempt(s) not counted (resume the campaign)" if interrupted else ""
    if config.stopped:  # fewer passes by design, never under-sampled: out whatever its passes show
        return False, f"{STOPPED}: {config.stopped}"
    if config.seeds_missing:  # the seeds are repetitions of it: one that does not hold is the reason, named
        return False, f"not every seed of the protocol holds ({config.seeds_missing})"
    if not counted:
        return False, "no attempt" + (f" completed: {interrupted} interrupted" if interrupted else "")
    if Status.FAILED in counted:
        return False, f"{counted.count(Status.FAILED)} failed attempt(s) (did not complete the corpus)"
    if Status.REJECTED in counted:
        if counted.count(Status.REJECTED) == len(config.not_shown):
            return False, f"{QUALITY_NOT_SHOWN}{config.not_shown[-1]}"
        return False, f"{counted.count(Status.REJECTED)} rejected attempt(s) (a check failed)"
    if Status.PENDING in counted:
        return False, "pending reference: not judged against the reference yet"
    if Status.RUNNING in counted:
        return False, f"{counted.count(Status.RUNNING)} attempt(s) still running: not finished"
    short = under_sampled(len(counted), required)
    if short:
        return False, f"{short}: fewer countable passes than passes_per_variant; run the missing passes{besides}"
    return True, f"{len(counted)} of {len(counted)} attempts accepted{besides}"
