"""Failure reasons, per-batch progress, and fault injection for tests (GPUCOST_FAULT).

GPUCOST_FAULT=oom@N raises the device's out-of-memory error at the N-th measured batch,
kill@N makes the child SIGKILL itself there, dupid@N writes the N-th entry's id twice in the
predictions file. Unset in normal use.
"""

from __future__ import annotations

import mmap
import os
import re
import signal
import struct
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

ENV = "GPUCOST_FAULT"
_PATTERN = re.compile(r"^(oom|kill|dupid)@([1-9][0-9]*)$")


@dataclass(frozen=True)
class Fault:
    kind: str = ""
    at: int = 0

    @property
    def dupid_at(self) -> int:
        return self.at if self.kind == "dupid" else 0


def parse(value: str) -> Fault:
    """The fault a GPUCOST_FAULT value asks for; a malformed value is a one-line error."""
    value = (value or "").strip()
    if not value:
        return Fault()
    match = _PATTERN.match(value)
    if not match:
        raise GpucostError(f"{ENV}={value!r} is malformed; expected oom@N, kill@N or dupid@N with N >= 1")
    return Fault(match.group(1), int(match.group(2)))


def reason(exc: BaseException) -> str:
    """A one-line failure reason for the attempts table."""
    import torch

    message = " ".join(str(exc).split())[:300]
    if isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)):
        return f"out of memory: {message}" if message else "out of memory"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return f"error: {type(exc).__name__}: {message}"


PROGRESS_FILE = "progress.bin"


class Progress:
    """Counts measured batches and entries in a shared 16-byte file (two integers written in memory,
    no system call), so the launcher knows how far a child got even if it was killed; fires the
    injected fault at its batch."""

    def __init__(self, workdir: Path, fault: Fault):
        self.fault = fault
        path = workdir / PROGRESS_FILE
        path.write_bytes(b"\0" * 16)
        with open(path, "r+b") as handle:
            self._map = mmap.mmap(handle.fileno(), 16)

    def on_batch(self, number: int, done: int) -> None:
        """Called before batch `number` (from 1) starts, with `done` entries finished before it."""
        struct.pack_into("<qq", self._map, 0, number - 1, done)
        if number != self.fault.at:
            return
        if self.fault.kind == "oom":
            import torch

            raise torch.cuda.OutOfMemoryError(f"injected by {ENV}=oom@{number}")
        if self.fault.kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)


def read_progress(workdir: Path) -> tuple[int, int] | None:
    """(batches done, entries done) as the child last recorded them; None when it never started."""
    path = workdir / PROGRESS_FILE
    if not path.exists() or path.stat().st_size < 16:
        return None
    return struct.unpack("<qq", path.read_bytes()[:16])
