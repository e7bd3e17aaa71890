"""Report figures as self-contained PNG data URIs (matplotlib, Agg backend)."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gpucost_mlflow.core.money.decision import Assessment
from gpucost_mlflow.report.tables import Summary


def _uri(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def durations(summaries: list[Summary]) -> str:
    """Every pass's duration per configuration as points, the median as a bar."""
    figure, axes = plt.subplots(figsize=(7, 3.2))
    for index, summary in enumerate(summaries):
        values = summary.configuration.durations.values
        axes.scatter([index] * len(values), values, color="#1f77b4", zorder=3, label="pass" if index == 0 else None)
        if values:
            median = summary.configuration.durations.median
            axes.hlines(median, index - 0.25, index + 0.25, color="#d62728", linewidth=2.5, label="median" if index == 0 else None)
    axes.set_xticks(range(len(summaries)), [s.configuration.variant for s in summaries], rotation=20)
    axes.set_ylabel("pass_s (s)")
    axes.set_title("Measured pass duration, every pass")
    axes.grid(axis="y", alpha=0.3)
    axes.legend(loc="best")
    return _uri(figure)


def memory(summaries: list[Summary]) -> str:
    """Peak memory per configuration and counter (counters side by side, never added)."""
    figure, axes = plt.subplots(figsize=(7, 3.2))
    counters = sorted({key for s in summaries for key in s.memory})
    width = 0.8 / max(1, len(counters))
    for k, counter in enumerate(counters):
        xs = [i + k * width for i in range(len(summaries))]
        axes.bar(xs, [s.memory.get(counter, 0) / 2**20 for s in summaries], width=width, label=counter)
    axes.set_xticks([i + width * (len(counters) - 1) / 2 for i in range(len(summaries))],
                    [s.configuration.variant for s in summaries], rotation=20)
    axes.set_ylabel("MiB")
    axes.set_title("Peak memory (largest over passes)")
    if counters:
        axes.legend(loc="best", fontsize=8)
    else:
        axes.text(0.5, 0.5, "no memory peak recorded", ha="center", transform=axes.transAxes)
    return _uri(figure)


def cost(assessments: list[Assessment]) -> str:
    """Committed cost per configuration; an unpriced one is labelled, never drawn as zero."""
    figure, axes = plt.subplots(figsize=(7, 3.2))
    for index, a in enumerate(assessments):
        if a.committed is not None:
            axes.bar(index, float(a.committed), color="#2ca02c")
        else:
            axes.text(index, 0.5, "not priced", ha="center", va="center", rotation=90, transform=axes.get_xaxis_transform())
    axes.set_xticks(range(len(assessments)), [a.configuration.variant for a in assessments], rotation=20)
    axes.set_xlim(-0.6, len(assessments) - 0.4)
    currency = next((a.currency for a in assessments if a.plan), "")
    axes.set_ylabel(f"committed ({currency})" if currency else "committed")
    axes.set_title("Committed cost per configuration (cheapest covering plan)")
    return _uri(figure)
