"""Failure reasons and fault injection for tests (GPUCOST_FAULT).

GPUCOST_FAULT=oom@N raises the device's out-of-memory error at the N-th measured batch,
kill@N makes the child SIGKILL itself there, stall@N:S makes it sleep S seconds there (a pass a test
interrupts while it runs, without burning the CPU the other tests share), dupid@N writes the N-th entry's
id twice in the predictions file, shape-setup:S makes the child sleep S seconds the first time its process meets a
batch shape (warm-up included), as a kernel that builds a plan per new (batch, length) shape does on a GPU.
Unset in normal use.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.judging.status import Status

ENV = "GPUCOST_FAULT"
_PATTERN = re.compile(r"^(?:(oom|kill|dupid)@([1-9][0-9]*)|stall@([1-9][0-9]*):([0-9]+(?:\.[0-9]+)?)"
                      r"|shape-setup:([0-9]+(?:\.[0-9]+)?))$")


@dataclass(frozen=True)
class Fault:
    kind: str = ""
    at: int = 0
    seconds: float = 0.0  # how long a stall sleeps, or a shape-setup each new shape

    @property
    def dupid_at(self) -> int:
        return self.at if self.kind == "dupid" else 0

    def first_shape(self) -> None:
        """A batch shape the process had not met: a shape-setup fault sleeps its seconds, as a new shape's setup."""
        if self.kind == "shape-setup":
            time.sleep(self.seconds)

    def fire(self, number: int) -> None:
        """At this fault's batch (from 1): raise the device's out-of-memory error, SIGKILL the child or sleep."""
        if number != self.at:
            return
        if self.kind == "stall":
            time.sleep(self.seconds)
            return
        if self.kind == "oom":
            import torch

            raise torch.cuda.OutOfMemoryError(f"injected by {ENV}=oom@{number}")
        if self.kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)


def parse(value: str) -> Fault:
    """The fault a GPUCOST_FAULT value asks for; a malformed value is a one-line error."""
    value = (value or "").strip()
    if not value:
        return Fault()
    match = _PATTERN.match(value)
    if not match:
        raise GpucostError(f"{ENV}={value!r} is malformed; expected oom@N, kill@N, dupid@N, stall@N:SECONDS "
                           "with N >= 1, or shape-setup:SECONDS")
    kind, at, stall_at, seconds, setup = match.groups()
    if stall_at:
        return Fault("stall", int(stall_at), float(seconds))
    if setup:
        return Fault("shape-setup", 0, float(setup))
    return Fault(kind, int(at))


# Allocation failures some device libraries still report as a plain RuntimeError rather than torch's type.
# torch's CPU allocator says "can't allocate memory: you tried to allocate N bytes" (DefaultCPUAllocator).
OOM_MESSAGES = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "HIPBLAS_STATUS_ALLOC_FAILED", "can't allocate memory")


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's out-of-memory error (torch.cuda.OutOfMemoryError is the same class; ROCm raises it too, saying
    "HIP out of memory"), the host's MemoryError, or a RuntimeError a device library raised for a failed allocation."""
    import torch

    oom_type = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    if isinstance(exc, (oom_type, torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(marker.lower() in text.lower() for marker in OOM_MESSAGES)


def reason(exc: BaseException) -> str:
    """A one-line failure reason for the attempts table."""
    message = one_line(exc)
    if is_out_of_memory(exc):
        return f"out of memory: {message}" if message else "out of memory"
    if isinstance(exc, KeyboardInterrupt):
        return str(Status.INTERRUPTED)
    return f"error: {type(exc).__name__}: {message}"
