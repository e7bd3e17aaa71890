"""The campaign's terminal progress: passes done / total, current variant, batches, elapsed, remaining.

On a TTY one line is redrawn in place; elsewhere (CI logs) only one plain line per finished pass.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from gpucost_mlflow.cli.durations import timing_words
from gpucost_mlflow.core.campaign.schedule import Slot
from gpucost_mlflow.execution.batch_counter import read_pass
from gpucost_mlflow.flow.campaign import Display


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"



class CampaignProgress:
    """Holds the counters and draws them; `display()` gives the hooks for run_campaign."""

    def __init__(self, stream: TextIO | None = None, interval_s: float = 0.5):
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self.started = time.monotonic()
        self.total = self.todo = self.done = 0
        self.slot: Slot | None = None
        self.batches = 0
        self.workdir: Path | None = None
        self.campaign_id = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        if self.done:
            eta = _clock(elapsed / self.done * (self.todo - self.done))
        else:
            eta = "estimating"
        batch = ""
        if self.workdir is not None:
            progress = read_pass(self.workdir)
            batch = f", batch {progress[0] if progress else 0}/{self.batches}"
        current = f"{self.slot.variant} (round {self.slot.round}){batch}" if self.slot else "-"
        return (f"campaign {self.campaign_id}: pass {self.total - self.todo + self.done}/{self.total} done, "
                f"now {current}, elapsed {_clock(elapsed)}, remaining ~{eta}")

    def _draw(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.stream.write("\r\x1b[2K" + self.line())
            self.stream.flush()

    def display(self) -> Display:
        def on_plan(campaign_id: str, total: int, todo: int) -> None:
            self.campaign_id, self.total, self.todo = campaign_id, total, todo
            self.started = time.monotonic()
            self.stream.write(f"campaign {campaign_id}: {todo} of {total} scheduled passes to run\n")
            if self.live:
                self._thread = threading.Thread(target=self._draw, daemon=True)
                self._thread.start()

        def on_pass_start(slot: Slot, batches: int, workdir) -> None:
            self.slot, self.batches, self.workdir = slot, batches, None

        def on_child_start(workdir: Path) -> None:
            self.workdir = workdir

        def on_pass_end(slot: Slot, result) -> None:
            self.done += 1
            self.workdir = None
            timing = timing_words(result.metrics)
            prefix = "\r\x1b[2K" if self.live else ""
            self.stream.write(
                f"{prefix}[{self.total - self.todo + self.done}/{self.total}] round {slot.round} position "
                f"{slot.position} {slot.variant}: {result.status}, {timing}\n"
            )
            self.stream.flush()

        def on_stop(stop, dropped: int) -> None:
            self.total, self.todo = self.total - dropped, self.todo - dropped
            prefix = "\r\x1b[2K" if self.live else ""
            self.stream.write(f"{prefix}{stop.line()}\n")
            self.stream.flush()

        return Display(on_plan, on_pass_start, on_child_start, on_pass_end, on_stop)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
