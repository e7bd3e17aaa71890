"""The start gate of a lane: a lane's child says it is ready for its measured pass, then waits for the launcher's go.

Every lane of a pass loads and warms up at its own pace; the launcher releases them together once all are ready
(or ended), so no lane's load or warm-up runs inside another lane's measured pass (execution/lanes.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

READY = "ready"


def wait(workdir: Path) -> None:
    """Mark this lane ready, then block until the launcher writes its go on this child's stdin (or closes it)."""
    (workdir / READY).write_text("", encoding="utf-8")
    sys.stdin.buffer.read(1)


def is_ready(workdir: Path) -> bool:
    return (workdir / READY).exists()
