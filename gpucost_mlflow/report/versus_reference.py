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


def agreement_text(rows: pd.DataFrame) -> str:
    """The label agreement of its accepted passes with the reference and its exact interval (the latest pass's: the
    outputs of a deterministic configuration do not change); '' when none was compared."""
    if LABEL_AGREEMENT not in rows:
        return ""
    compared = rows[(rows["status"] == Status.ACCEPTED) & rows[LABEL_AGREEMENT].notna()]
    if not len(compared):
        return ""
    last = compared.iloc[-1]
    interval = (f" (exact interval {100 * last[LABEL_AGREEMENT_LOW]:.2f}-{100 * last[LABEL_AGREEMENT_HIGH]:.2f} %)"
                if LABEL_AGREEMENT_LOW in compared and pd.notna(last[LABEL_AGREEMENT_LOW]) else "")
    return f"agreement {100 * last[LABEL_AGREEMENT]:.2f} %{interval}"


def flips_text(rows: pd.DataFrame) -> str:
    """The answers its accepted passes changed against the reference, by direction, with the exact McNemar p-value:
    one figure when every pass changed the same ones (a deterministic configuration), else their range; '' when
    none was counted (no gold labels, the reference itself, or passes recorded before flips were counted)."""
    if FLIPS_LOST not in rows:
        return ""
    counted = rows[(rows["status"] == Status.ACCEPTED) & rows[FLIPS_LOST].notna()]
    if not len(counted):
        return ""
    lost, gained = counted[FLIPS_LOST].astype(int), counted[FLIPS_GAINED].astype(int)
    if lost.nunique() == 1 and gained.nunique() == 1:
        inputs = int(counted[EXPECTED_IDS].iloc[-1]) if EXPECTED_IDS in counted else len(rows)
        return flips.Flips(int(lost.iloc[-1]), int(gained.iloc[-1]), inputs).line()
    return (f"{lost.min()}-{lost.max()} lost, {gained.min()}-{gained.max()} gained over {len(counted)} passes "
            "(the passes changed different answers)")


def said(rows: pd.DataFrame) -> str:
    """Its agreement and its flips in one cell ('' when it was not compared with the reference)."""
    return "; ".join(text for text in (agreement_text(rows), flips_text(rows)) if text)
