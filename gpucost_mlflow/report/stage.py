"""A pre-registered second stage (`gpucost campaign --settle`, core/campaign/settle.py) as the report reads it from
the attempts: the latest stage's plan, where each configuration stands in it, the looks at the data it makes, and
the note on what it added."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from gpucost_mlflow.core.campaign.settle import STAGE, Progress, StagePlan, looks
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.stats import per_look
from gpucost_mlflow.core.money.decision import Assessment, Configuration
from gpucost_mlflow.report.measured import attempts_in
from gpucost_mlflow.tracking.attempts_table import Attempt

Attempts = Sequence[Attempt] | pd.DataFrame  # the report's attempts, or their table (tracking/attempts_table.py)


def stage_notes(attempts: Attempts, configs: list[Configuration], ceiling: int | None) -> list[str]:
    """What a pre-registered second stage (`gpucost campaign --settle`) added: the configurations it ran again and the
    passes each now has, read once with all of them."""
    again = {a.identity.variant for a in attempts_in(attempts) if a.place.stage == STAGE}
    if not again:
        return []
    counts = ", ".join(f"{c.name} {len(c.durations.values)}" for c in configs if c.variant in again)
    return [(f"a second stage pre-registered in the protocol (settle.max_passes_per_variant: {ceiling}) ran further "
            f"passes of the undecided configurations, the same number each; passes per configuration now: {counts}; "
            "the decision below reads them all once")]


def looked(protocol: Protocol, attempts: Attempts) -> tuple[float, int]:
    """The confidence each separation is read at and the looks the protocol's is shared over: a second stage declared
    (`settle`) or run makes two looks, each at half the error rate (docs/costs.md, "Two looks at the data")."""
    count = looks(protocol.settle_max_passes, latest_stage(attempts) is not None)
    return per_look(protocol.confidence, count), count


def latest_stage(attempts: Attempts) -> StagePlan | None:
    """The latest second stage recorded on the passes (its plan over every device of its group), or None."""
    staged = [a for a in attempts_in(attempts) if a.place.settle_plan]
    if not staged:
        return None
    latest = max(reversed(staged), key=lambda a: (a.timings.start_ms is None, a.timings.start_ms or 0))  # ties: last
    return StagePlan.from_record(latest.place.settle_plan)


def progress(assessments: list[Assessment]) -> dict[tuple[str, str], Progress]:
    """Per (device, variant), where its configuration stands in a second stage (the least advanced one when the
    variant has several configurations on the device): counted passes, one running, one failed or rejected."""
    found: dict[tuple[str, str], Progress] = {}
    for a in assessments:
        statuses = a.configuration.statuses
        mine = Progress(len(a.configuration.durations.values), Status.RUNNING in statuses,
                        Status.FAILED in statuses or Status.REJECTED in statuses)
        key = (a.configuration.device, a.configuration.variant)
        found[key] = min(found.get(key, mine), mine, key=lambda p: (not p.running, p.counted))
    return found
