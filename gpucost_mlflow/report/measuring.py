"""The price of measuring in a report (issue 63): the machine time the campaigns it read recorded, and that time at
the committed plan's offer (core/money/measuring_price.py), for the card's Window line and the decision run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.measuring_price import Price, Spent, at_plan
from gpucost_mlflow.report.measured import attempts_in
from gpucost_mlflow.tracking.attempts_table import Attempt


def spent(attempts: Sequence[Attempt] | pd.DataFrame, measuring: Mapping[str, float]) -> Spent | None:
    """The hours the attempts' campaigns recorded (`measuring`: each campaign's `measuring_h`), how many recorded none
    and the devices the recorded ones ran on; None when no campaign recorded its hours (a store written before)."""
    found = attempts_in(attempts)
    ids = [cid for cid in dict.fromkeys(a.place.campaign_id for a in found) if cid]
    recorded = [cid for cid in ids if cid in measuring]
    if not recorded:
        return None
    devices = tuple(sorted({a.identity.device for a in found if a.place.campaign_id in recorded and a.identity.device}))
    return Spent(sum(measuring[cid] for cid in recorded), len(recorded), len(ids) - len(recorded), devices)


def priced(found: Spent | None, choice: Choice) -> Price | None:
    """The measuring at the committed plan's offer, for a decided report (None otherwise)."""
    if found is None or not choice.decided or choice.chosen[0].plan is None:
        return None
    return at_plan(choice.chosen[0].plan, found.hours)
