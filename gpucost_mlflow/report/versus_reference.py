"""A configuration against the reference, as the report says it: its label agreement with the exact interval, the
answers its accepted passes changed by direction, and why a pass's quality bar was not shown (issue 51), read from
its attempts' rows."""

from __future__ import annotations

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


def not_shown(rows: pd.DataFrame) -> tuple[str, ...]:
    """Each rejected row whose quality bar was not shown (and none failed): ' on 500 inputs: about 2,131 needed at this
    rate (reference_agreement 98.60 % of 500 ...)', what follows 'quality not shown' in the feasibility."""
    found = []
    for verdict, reason in zip(rows["quality_verdict"].fillna(""), rows["reason"].fillna("")):
        if str(verdict).startswith(f"{NOT_SHOWN}:"):
            head, _, tail = str(reason).partition(f": {QUALITY_NOT_SHOWN}")
            found.append(f"{tail} ({head.split(': ', 1)[0]})" if tail else f": {reason}")
    return tuple(found)


def _compared(rows: pd.DataFrame, column: str, status: str) -> pd.DataFrame:
    """Its passes of this status that recorded the figure."""
    return rows[(rows["status"] == status) & rows[column].notna()] if column in rows else rows.iloc[0:0]


def agreement_text(rows: pd.DataFrame, status: str = Status.ACCEPTED, bar: float | None = None) -> str:
    """The label agreement of its passes of this status (accepted by default) with the reference and its exact
    interval (the latest pass's: the outputs of a deterministic configuration do not change), and the bar where given;
    '' when none was compared."""
    compared = _compared(rows, LABEL_AGREEMENT, status)
    if not len(compared):
        return ""
    last = compared.iloc[-1]
    bar_said = f"; bar {100 * bar:.2f} %" if bar is not None else ""
    interval = (f" (exact interval {100 * last[LABEL_AGREEMENT_LOW]:.2f}-{100 * last[LABEL_AGREEMENT_HIGH]:.2f} %"
                f"{bar_said})" if LABEL_AGREEMENT_LOW in compared and pd.notna(last[LABEL_AGREEMENT_LOW])
                else f" ({bar_said[2:]})" if bar_said else "")
    return f"agreement {100 * last[LABEL_AGREEMENT]:.2f} %{interval}"


def flips_text(rows: pd.DataFrame, status: str = Status.ACCEPTED) -> str:
    """The answers its passes of this status (accepted by default) changed against the reference, by direction, with
    the exact McNemar p-value: one figure when every pass changed the same ones (a deterministic configuration), else
    their range; '' when none was counted (no gold labels, the reference itself, or passes recorded before flips were
    counted)."""
    counted = _compared(rows, FLIPS_LOST, status)
    if not len(counted):
        return ""
    lost, gained = counted[FLIPS_LOST].astype(int), counted[FLIPS_GAINED].astype(int)
    if lost.nunique() == 1 and gained.nunique() == 1:
        inputs = int(counted[EXPECTED_IDS].iloc[-1]) if EXPECTED_IDS in counted else len(rows)
        return flips.Flips(int(lost.iloc[-1]), int(gained.iloc[-1]), inputs).line()
    return (f"{lost.min()}-{lost.max()} lost, {gained.min()}-{gained.max()} gained over {len(counted)} passes "
            "(the passes changed different answers)")


def said(rows: pd.DataFrame, bar: float | None = None) -> str:
    """Its agreement and its flips in one cell: its accepted passes'; with none compared, its rejected passes' with
    the agreement bar they were judged against (the evidence of a rejection: issue 66); '' when it was not compared
    with the reference."""
    accepted = "; ".join(text for text in (agreement_text(rows), flips_text(rows)) if text)
    if accepted:
        return accepted
    rejected = "; ".join(text for text in (agreement_text(rows, Status.REJECTED, bar),
                                           flips_text(rows, Status.REJECTED)) if text)
    return f"rejected: {rejected}" if rejected else ""
