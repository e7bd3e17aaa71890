"""A running pass's heartbeat: the launcher's sign of life on its run, and how a reader tells that it stopped.

While a pass's run is open, its launcher (the parent, never the timed child) rewrites `gpucost.heartbeat` every
INTERVAL_S seconds from a daemon thread; the interval is a start tag, so a reader judges by the writer's interval.
A RUNNING run whose last sign of life (its heartbeat, else its start time for runs written before heartbeats) is
older than MISSED intervals is interrupted, on whatever host its launcher ran: a launcher on another host cannot be
asked whether it is alive, its heartbeat can. Every error inside the thread is swallowed: after the child starts
nothing may need the store (flow/launcher.py), and the attempt reaches the store through the spool anyway.
"""

from __future__ import annotations

import datetime as dt
import math
import threading

from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import schema

INTERVAL_S = 60.0  # seconds between two heartbeats of a running pass
MISSED = 3  # heartbeats missed before a RUNNING pass reads as interrupted
STOP_WAIT_S = 10.0  # the longest a stop waits for a heartbeat being written (a store that stopped answering)


def stamp(now: dt.datetime | None = None) -> str:
    """A heartbeat's value: the UTC time to the second, ISO 8601 with its offset."""
    return (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def start_tags(now: dt.datetime | None = None) -> dict[str, str]:
    """The tags a pass opens with: its first heartbeat and the interval of the next ones."""
    return {schema.HEARTBEAT: stamp(now), schema.HEARTBEAT_INTERVAL: f"{INTERVAL_S:g}"}


def interval_of(tags: dict) -> float:
    """The interval the run's writer declared; INTERVAL_S for runs written before heartbeats or with a bad value."""
    try:
        value = float(tags.get(schema.HEARTBEAT_INTERVAL, ""))
    except ValueError:
        return INTERVAL_S
    return value if math.isfinite(value) and value > 0 else INTERVAL_S


def last_sign_of_life(tags: dict, start_time_ms: int | None) -> tuple[dt.datetime | None, bool]:
    """When the run last showed it was alive, and whether that is a heartbeat (else its start time, or None)."""
    try:
        beat = dt.datetime.fromisoformat(tags.get(schema.HEARTBEAT, ""))
    except ValueError:
        beat = None
    if beat is not None:
        return (beat if beat.tzinfo else beat.replace(tzinfo=dt.timezone.utc)), True
    if start_time_ms:
        return dt.datetime.fromtimestamp(start_time_ms / 1000, dt.timezone.utc), False
    return None, False


def stale_reason(tags: dict, start_time_ms: int | None, now: dt.datetime | None = None) -> str:
    """Why a RUNNING run is taken as interrupted ('' while its heartbeat is fresh): no heartbeat for MISSED
    intervals."""
    now = now or dt.datetime.now(dt.timezone.utc)
    seen, is_beat = last_sign_of_life(tags, start_time_ms)
    interval = interval_of(tags)
    if seen is None or (now - seen).total_seconds() <= MISSED * interval:
        return ""
    since = stamp(seen) if is_beat else f"its start at {stamp(seen)}"
    return (f"interrupted (no heartbeat since {since}, more than {MISSED} x {interval:g} s ago; "
            f"launcher {tags.get(schema.LAUNCHER, '') or 'not recorded'})")


class Heartbeat:
    """The launcher's daemon thread that rewrites the heartbeat of its open runs (one pass's, or every corpus's of a
    delivery's child) until stopped; a run whose attempt is recorded leaves it (`finish`)."""

    def __init__(self, client: MlflowClient, run_id: str, interval_s: float | None = None, more: tuple[str, ...] = ()):
        self.client = client
        self.run_id = run_id
        self.run_ids = [run_id, *more]  # a delivery's child: every corpus's run, each leaving as it is recorded
        self.interval_s = INTERVAL_S if interval_s is None else interval_s  # INTERVAL_S read now, as start_tags does
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"gpucost-heartbeat-{run_id}", daemon=True)

    def finish(self, run_id: str) -> None:
        """One run's attempt is recorded: it shows no sign of life any more; the last one stops the thread."""
        self.run_ids = [other for other in self.run_ids if other != run_id]
        if not self.run_ids:
            self.stop()

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Stop beating (idempotent), waiting at most wait_s for a heartbeat being written."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(wait_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _beat(self) -> None:
        while not self._stopped.wait(self.interval_s):
            for run_id in self.run_ids:
                try:
                    self.client.set_tag(run_id, schema.HEARTBEAT, stamp())
                except Exception:  # noqa: BLE001, S110 - a store error must never reach the pass (see the module doc)
                    pass
