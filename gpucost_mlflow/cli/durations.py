"""A finished pass's duration as the command lines print it: the figure the decision reads, under its one name.
Light: the `gpucost pass` command imports it without the campaign's modules (and torch behind them)."""

from __future__ import annotations

from gpucost_mlflow.core.names import PASS_S, STEADY_LAP_S


def timing_words(metrics: dict) -> str:
    """A finished pass's duration as the decision reads it: 'steady lap 1.43 s' (issue 66: one name everywhere), else
    'pass_s 1.50' for a pass of one lap (a deliverable, a lanes pass), else 'pass_s empty'."""
    if metrics.get(STEADY_LAP_S) is not None:
        return f"steady lap {metrics[STEADY_LAP_S]:.2f} s"
    return f"{PASS_S} {metrics[PASS_S]:.2f}" if metrics.get(PASS_S) is not None else f"{PASS_S} empty"
