"""How far a child's measured pass got: batches and entries done, readable even after the child was killed."""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from gpucost_mlflow.core.measurement.lanes import FOLDER as LANE_FOLDER

FILE = "progress.bin"
_LAYOUT = "<qq"
_SIZE = struct.calcsize(_LAYOUT)


class BatchCounter:
    """Two integers in a shared 16-byte file, written in memory (no system call inside the clock)."""

    def __init__(self, workdir: Path):
        path = workdir / FILE
        path.write_bytes(b"\0" * _SIZE)
        with open(path, "r+b") as handle:
            self._map = mmap.mmap(handle.fileno(), _SIZE)

    def record(self, number: int, done: int) -> None:
        """Called before batch `number` (from 1) starts, with `done` entries finished before it."""
        struct.pack_into(_LAYOUT, self._map, 0, number - 1, done)


def read(workdir: Path) -> tuple[int, int] | None:
    """(batches done, entries done) as the child last recorded them; None when it never started."""
    path = workdir / FILE
    if not path.exists() or path.stat().st_size < _SIZE:
        return None
    return struct.unpack(_LAYOUT, path.read_bytes()[:_SIZE])


def read_pass(workdir: Path) -> tuple[int, int] | None:
    """(batches done, entries done) of a pass: its child's counter, or the sum of its lanes' (core/measurement/lanes.py)
    while they run apart; None when no child started counting."""
    found = read(workdir)
    if found is not None:
        return found
    lanes = [counted for counted in (read(path) for path in sorted(workdir.glob(LANE_FOLDER.format("*")))) if counted]
    if not lanes:
        return None
    return sum(batches for batches, _ in lanes), sum(entries for _, entries in lanes)
