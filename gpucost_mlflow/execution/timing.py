"""The pass clock: host perf_counter_ns with a device synchronisation before each read."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def no_sync() -> None:
    """CPU work is synchronous: nothing to wait for."""


@dataclass
class Stopwatch:
    """Synchronise, read the host clock; the same boundaries for every variant.

    `synchronize` is `torch.cuda.synchronize` on CUDA and ROCm (same torch API), a no-op on CPU.
    """

    synchronize: Callable[[], None] = no_sync
    started_ns: int | None = None
    stopped_ns: int | None = None

    def start(self) -> None:
        self.synchronize()
        self.started_ns = time.perf_counter_ns()

    def stop(self) -> float:
        """Stop and return the elapsed seconds."""
        self.synchronize()
        self.stopped_ns = time.perf_counter_ns()
        return self.seconds

    @property
    def seconds(self) -> float:
        if self.started_ns is None or self.stopped_ns is None:
            raise RuntimeError("stopwatch read before it was started and stopped")
        return (self.stopped_ns - self.started_ns) / 1e9
