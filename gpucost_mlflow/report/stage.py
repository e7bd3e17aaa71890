"""A pre-registered second stage (`gpucost campaign --settle`, core/campaign/settle.py) as the report reads it from
the attempts: the latest stage's plan, where each configuration stands in it, the looks at the data it makes, and
the note on what it added."""

from __future__ import annotations

import pandas as pd

from gpucost_mlflow.core.campaign.settle import STAGE, Progress, StagePlan, looks
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.stats import per_look
from gpucost_mlflow.core.money.decision import Assessment, Configuration


def stage_notes(table: pd.DataFrame, configs: list[Configuration], ceiling: int | None) -> list[str]:
    """What a pre-registered second stage (`gpucost campaign --settle`) added: the configurations it ran again and the
    passes each now has, read once with all of them."""
    if "stage" not in table or not (table["stage"] == STAGE).any():
        return []
    again = set(table[table["stage"] == STAGE]["variant"])
    counts = ", ".join(f"{c.name} {len(c.durations.values)}" for c in configs if c.variant in again)
    return [(f"a second stage pre-registered in the protocol (settle.max_passes_per_variant: {ceiling}) ran further "
            f"passes of the undecided configurations, the same number each; passes per configuration now: {counts}; "
            "the decision below reads them all once")]


def looked(protocol: Protocol, table: pd.DataFrame) -> tuple[float, int]:
    """The confidence each separation is read at and the looks the protocol's is shared over: a second stage declared
    (`settle`) or run makes two looks, each at half the error rate (docs/costs.md, "Two looks at the data")."""
    count = looks(protocol.settle_max_passes, latest_stage(table) is not None)
    return per_look(protocol.confidence, count), count


def latest_stage(table: pd.DataFrame) -> StagePlan | None:
    """The latest second stage recorded on the passes (its plan over every device of its group), or None."""
    if "settle_plan" not in table or not (table["settle_plan"].fillna("") != "").any():
        return None
    rows = table[table["settle_plan"].fillna("") != ""].sort_values("start_time")
    return StagePlan.from_record(rows["settle_plan"].iloc[-1])


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
