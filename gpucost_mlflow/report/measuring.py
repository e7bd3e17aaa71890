"""The price of measuring in a report (issue 63): the machine time the campaigns it read recorded, and that time at
the committed plan's offer (core/money/measuring_price.py), for the card's Window line and the decision run."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.measuring_price import Price, Spent, at_plan


def spent(table: pd.DataFrame, measuring: Mapping[str, float]) -> Spent | None:
    """The hours the table's campaigns recorded (`measuring`: each campaign's `measuring_h`), how many recorded none
    and the devices the recorded ones ran on; None when no campaign recorded its hours (a store written before)."""
    if not len(table) or "campaign_id" not in table:
        return None
    ids = [cid for cid in dict.fromkeys(table["campaign_id"].fillna("")) if cid]
    recorded = [cid for cid in ids if cid in measuring]
    if not recorded:
        return None
    rows = table[table["campaign_id"].isin(recorded)]
    devices = tuple(sorted({str(d) for d in rows["device"].dropna() if str(d)})) if "device" in rows else ()
    return Spent(sum(measuring[cid] for cid in recorded), len(recorded), len(ids) - len(recorded), devices)


def priced(found: Spent | None, choice: Choice) -> Price | None:
    """The measuring at the committed plan's offer, for a decided report (None otherwise)."""
    if found is None or not choice.decided or choice.chosen[0].plan is None:
        return None
    return at_plan(choice.chosen[0].plan, found.hours)
