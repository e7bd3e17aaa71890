"""The pass clock: host perf_counter_ns with a device synchronisation before each read; device events apart."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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

    def lap(self) -> float:
        """Seconds since the start, synchronised, the clock still running (whether to repeat the corpus)."""
        self.synchronize()
        return (time.perf_counter_ns() - self.started_ns) / 1e9

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


DEVICE_EVENT_METRIC = "device_event_s"


@dataclass
class DeviceEvents:
    """Device time between two events recorded just inside the host clock: a cross-check logged apart as
    `device_event_s`, never the protocol's figure (`pass_s` stays the host clock).

    `new_event` is `torch.cuda.Event` on CUDA and ROCm (HIP events, same torch API); None on the CPU, where
    `reason` says why the value is absent. Both events are created before the clock starts.
    """

    new_event: Callable[..., Any] | None = None
    reason: str = "CPU pass: no device events; the host clock is the only clock"
    started: Any = None
    ended: Any = None
    recorded: bool = False

    def __post_init__(self) -> None:
        if self.new_event is not None:
            self.started = self.new_event(enable_timing=True)
            self.ended = self.new_event(enable_timing=True)

    @classmethod
    def for_device(cls, device) -> DeviceEvents:
        """Timing events on a CUDA / ROCm device, none elsewhere."""
        if device.type == "cuda":
            import torch

            return cls(torch.cuda.Event)
        return cls(reason=f"{device.type.upper()} pass: no device events; the host clock is the only clock")

    def record_start(self) -> None:
        if self.started is not None:
            self.started.record()

    def record_end(self) -> None:
        if self.ended is not None:
            self.ended.record()
            self.recorded = True

    def result(self, completed: bool) -> tuple[float | None, str]:
        """(seconds between the two events, '') or (None, why), read after the clock stopped."""
        if self.new_event is None:
            return None, self.reason
        if not completed or not self.recorded:
            return None, "pass did not complete"
        self.ended.synchronize()
        return self.started.elapsed_time(self.ended) / 1000, ""
