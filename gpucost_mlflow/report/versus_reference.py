"""A configuration against the reference, as the report says it: its label agreement with the exact interval, the
answers its accepted passes changed by direction, and why a pass's quality bar was not shown (issue 51), read from
its attempts' attributes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from gpucost_mlflow.core.judging import flips
from gpucost_mlflow.core.judging.bounds import NOT_SHOWN
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.money.feasibility import QUALITY_NOT_SHOWN
from gpucost_mlflow.core.names import (
    EXPECTED_IDS,
    FLIPS_GAINED,
    FLIPS_LOST,
    LABEL_AGREEMENT,
    LABEL_AGREEMENT_HIGH,
    LABEL_AGREEMENT_LOW,
)
from gpucost_mlflow.report.measured import attempts_in
from gpucost_mlflow.tracking.attempts_table import Attempt

Attempts = Sequence[Attempt] | pd.DataFrame  # a configuration's attempts, or a table's rows (tracking/attempts_table)


def not_shown(rows: Attempts) -> tuple[str, ...]:
    """Each rejected row whose quality bar was not shown (and none failed): ' on 500 inputs: about 2,131 needed at this
    rate (reference_agreement 98.60 % of 500 ...)', what follows 'quality not shown' in the feasibility."""
    found = []
    for a in attempts_in(rows):
        if a.verdict.quality_verdict.startswith(f"{NOT_SHOWN}:"):
            head, _, tail = a.reason.partition(f": {QUALITY_NOT_SHOWN}")
            found.append(f"{tail} ({head.split(': ', 1)[0]})" if tail else f": {a.reason}")
    return tuple(found)


def _compared(rows: Attempts, metric: str, status: str) -> list[Attempt]:
    """Its passes of this status that recorded the figure."""
    return [a for a in attempts_in(rows) if a.status == status and not _missing(a.metrics.get(metric))]


def _missing(value: float | None) -> bool:
    return value is None or math.isnan(value)


def agreement_text(rows: Attempts, status: str = Status.ACCEPTED, bar: float | None = None) -> str:
    """The label agreement of its passes of this status (accepted by default) with the reference and its exact
    interval (the latest pass's: the outputs of a deterministic configuration do not change), and the bar where given;
    '' when none was compared."""
    compared = _compared(rows, LABEL_AGREEMENT, status)
    if not compared:
        return ""
    last = compared[-1].metrics
    bar_said = f"; bar {100 * bar:.2f} %" if bar is not None else ""
    low, high = (last.get(name, math.nan) for name in (LABEL_AGREEMENT_LOW, LABEL_AGREEMENT_HIGH))
    interval = (f" (exact interval {100 * low:.2f}-{100 * high:.2f} %{bar_said})" if not math.isnan(low)
                else f" ({bar_said[2:]})" if bar_said else "")
    return f"agreement {100 * last[LABEL_AGREEMENT]:.2f} %{interval}"


def flips_text(rows: Attempts, status: str = Status.ACCEPTED) -> str:
    """The answers its passes of this status (accepted by default) changed against the reference, by direction, with
    the exact McNemar p-value: one figure when every pass changed the same ones (a deterministic configuration), else
    their range; '' when none was counted (no gold labels, the reference itself, or passes recorded before flips were
    counted)."""
    counted = _compared(rows, FLIPS_LOST, status)
    if not counted:
        return ""
    lost, gained = ([int(a.metrics[name]) for a in counted] for name in (FLIPS_LOST, FLIPS_GAINED))
    if len(set(lost)) == 1 and len(set(gained)) == 1:
        expected = counted[-1].metrics.get(EXPECTED_IDS)
        inputs = int(expected) if expected is not None else len(attempts_in(rows))
        return flips.Flips(lost[-1], gained[-1], inputs).line()
    return (f"{min(lost)}-{max(lost)} lost, {min(gained)}-{max(gained)} gained over {len(counted)} passes "
            "(the passes changed different answers)")


def said(rows: Attempts, bar: float | None = None) -> str:
    """Its agreement and its flips in one cell: its accepted passes'; with none compared, its rejected passes' with
    the agreement bar they were judged against (the evidence of a rejection: issue 66); '' when it was not compared
    with the reference."""
    accepted = "; ".join(text for text in (agreement_text(rows), flips_text(rows)) if text)
    if accepted:
        return accepted
    rejected = "; ".join(text for text in (agreement_text(rows, Status.REJECTED, bar),
                                           flips_text(rows, Status.REJECTED)) if text)
    return f"rejected: {rejected}" if rejected else ""
