"""A delivery's forecast held against what it really took: the rental realized (every attempt of every lot, setup
included, under the provider's terms) against the committed cost, the window realized against the forecast window,
the cost per validated result from the deliverables accepted, and while it runs the finish time at the realized rate
against the deadline.

Pure: amounts and hours in, words out. A forecast missed by more than the protocol's spread (`max_spread_ratio`, the
largest max/min of a configuration's passes the report accepts) says so: the committed plan is priced at the slowest
pass, so a delivery off by more than that ratio either way did not run as measured.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.fleet.delivery import ratio


@dataclass(frozen=True)
class Held:
    """The delivery fleet's realized rental and window beside the committed forecast, and the accepted deliverables."""

    realized: Decimal
    committed: Decimal
    currency: str
    realized_h: float | None  # the fleet's window: its first worker's start to its last one's end
    forecast_h: Decimal
    spread: float
    accepted: int

    @property
    def cost_ratio(self) -> float | None:
        return ratio(self.realized, self.committed)

    @property
    def window_ratio(self) -> float | None:
        return None if self.realized_h is None else ratio(Decimal(str(self.realized_h)), self.forecast_h)

    @property
    def per_result(self) -> Decimal | None:
        """The realized rental over the deliverables accepted (PROTOCOL.md §10); None when none was accepted."""
        if not self.accepted:
            return None
        return (self.realized / self.accepted).quantize(CENT, rounding=ROUND_UP)

    def misses(self) -> list[str]:
        """Each ratio outside the protocol's spread, said."""
        said = []
        for what, found in (("cost", self.cost_ratio), ("window", self.window_ratio)):
            if found is not None and not 1 / self.spread <= found <= self.spread:
                said.append(f"the {what} misses the forecast by more than the protocol's spread ({found:.2f} outside "
                            f"{1 / self.spread:.2f}-{self.spread:g}, max_spread_ratio {self.spread:g})")
        return said

    def line(self) -> str:
        """'Forecast held: cost 0.42 of 1.38 USD committed (ratio 0.30), window 0.03 h of 6.00 h (ratio 0.01); ...'."""
        window = ("window empty (no worker's start and end known)" if self.realized_h is None else
                  f"window {self.realized_h:.2f} h of {self.forecast_h:.2f} h forecast (ratio {self.window_ratio:.2f})")
        cost = f"cost {self.realized} of {self.committed} {self.currency} committed (ratio {self.cost_ratio:.2f})"
        result = (f"cost per validated result {self.per_result} {self.currency} ({self.realized} {self.currency} / "
                  f"{self.accepted} accepted deliverable{'s' if self.accepted != 1 else ''})" if self.accepted else
                  "cost per validated result undefined (no deliverable accepted; the rental stays in the balance)")
        return "; ".join([f"Forecast held: {cost}, {window}", result, *self.misses()])


def finish_at(done: int, total: int, elapsed_h: float, now: dt.datetime) -> dt.datetime | None:
    """When the corpora left are done at the rate realized so far (done over the hours since the first worker
    started); None without a rate (nothing delivered yet, or no time elapsed)."""
    if done <= 0 or elapsed_h <= 0:
        return None
    return now + dt.timedelta(hours=(total - done) * elapsed_h / done)


def finish_line(done: int, total: int, elapsed_h: float, now: dt.datetime, deadline: dt.datetime | None) -> str:
    """The finish time at the realized rate against the deadline, or why there is none."""
    if done >= total:
        return f"all {total} corpora delivered"
    at = finish_at(done, total, elapsed_h, now)
    if at is None:
        return f"finish time empty: no corpus delivered yet, so no realized rate ({total} corpora left)"
    head = (f"at the realized rate ({done} corpora in {elapsed_h:.2f} h) the {total - done} left finish at "
            f"{at.isoformat(timespec='minutes')}")
    if deadline is None:
        return f"{head}; no deadline declared"
    late = at > deadline
    return f"{head}, {'after' if late else 'before'} the deadline {deadline.isoformat(timespec='minutes')}" + (
        " (late: change the plan or budget the extra time)" if late else "")
