"""The harness's batching order, the same for every workload: corpus order, or sorted by token length."""

from __future__ import annotations


def batches(lengths: list[int], batch_size: int, grouping: str) -> list[list[int]]:
    """Index batches: corpus order, or sorted by token length (stable) for length grouping."""
    order = list(range(len(lengths)))
    if grouping == "sorted":
        order.sort(key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
