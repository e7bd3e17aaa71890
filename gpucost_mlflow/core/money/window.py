"""The campaign window: real elapsed hours between two local times in a zone, and which packages cover it."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gpucost_mlflow.core.errors import GpucostError

UTC = dt.timezone.utc


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise GpucostError(f"unknown time zone '{name}' (use an IANA name such as Europe/Amsterdam)") from None


def local_time(text: str, tz: ZoneInfo, name: str) -> dt.datetime:
    """An ISO local time in the zone; a time that does not exist (spring gap) or is ambiguous (autumn) is refused."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise GpucostError(f"{name} '{text}' is not an ISO date-time (e.g. 2026-11-30T09:00)") from None
    if value.tzinfo is not None:
        return value
    early, late = value.replace(tzinfo=tz, fold=0), value.replace(tzinfo=tz, fold=1)
    if early.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != value:
        raise GpucostError(f"{name} {text} does not exist in {tz.key} (clocks go forward)")
    if early.utcoffset() != late.utcoffset():
        raise GpucostError(f"{name} {text} is ambiguous in {tz.key} (clocks go back); add the UTC offset, e.g. "
                           f"{early.isoformat()}")
    return early


@dataclass(frozen=True)
class Window:
    start: dt.datetime
    end: dt.datetime

    @property
    def hours(self) -> float:
        """Real elapsed hours (UTC difference: daylight-saving changes counted)."""
        return (self.end.astimezone(UTC) - self.start.astimezone(UTC)).total_seconds() / 3600


def window(start: str, end: str, tz_name: str) -> Window:
    tz = zone(tz_name)
    result = Window(local_time(start, tz, "--start"), local_time(end, tz, "--end"))
    if result.hours <= 0:
        raise GpucostError(f"--end {end} is not after --start {start}")
    return result


def covers(days: int, hours: float) -> bool:
    """A package covers the window when its whole length is at least the window."""
    return days * 24 >= hours


def consecutive_needed(days: int, hours: float) -> int:
    """How many back-to-back packages of this length a window needs (to be budgeted explicitly)."""
    return max(1, math.ceil(hours / (days * 24)))
