"""When the planned work starts and when it must end: fixed dates, or relative to the moment the report is read.

A protocol written today with `plan.start: "2026-11-30T09:00+01:00"` presents a window in the past a week later.
`plan.start: at_report` with `deadline` as a duration (`96h`, `4d`) places the window from the moment the report is
read instead; the report prints that moment (issue 52). Pure: plain values in, dates out.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

AT_REPORT = "at_report"  # plan.start: the window starts when the report is read
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([hd])\s*$")  # a deadline after the start: 96h, 4d, 1.5 d


def moment(path: Path, name: str, value) -> dt.datetime | None:
    """An optional ISO date-time with its UTC offset (None when the field is absent)."""
    if value is None:
        return None
    try:
        found = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise GpucostError(f"{path}: field '{name}' must be an ISO date-time with its UTC offset") from None
    if found.tzinfo is None:
        raise GpucostError(f"{path}: field '{name}' needs a UTC offset (e.g. +01:00)")
    return found


def start(path: Path, value) -> dt.datetime | str | None:
    """plan.start: a date-time with its offset, or `at_report`."""
    return AT_REPORT if value == AT_REPORT else moment(path, "plan.start", value)


def deadline(path: Path, value, relative: bool) -> tuple[dt.datetime | None, float | None]:
    """The deadline as (a date-time, None) or, after a start at the report, (None, hours after it): a duration is
    refused with a fixed start and a date with a start at the report, each in one line."""
    if value is None:
        return None, None
    found = DURATION.match(str(value)) if not isinstance(value, dt.datetime) else None
    if relative:
        if found is None:
            raise GpucostError(f"{path}: field 'deadline' must be a duration after the start (96h, 4d) when "
                               f"plan.start is {AT_REPORT}, got {value!r}")
        return None, float(found.group(1)) * (24 if found.group(2) == "d" else 1)
    if found is not None:
        raise GpucostError(f"{path}: field 'deadline' is a duration ({value}): it needs plan.start: {AT_REPORT}")
    return moment(path, "deadline", value), None


def like(moment: dt.datetime, other: dt.datetime) -> dt.datetime:
    """`moment` comparable with `other`: without its offset when `other` has none (a plan built by hand)."""
    return moment.replace(tzinfo=None) if other.tzinfo is None else moment


def resolved(plan, fixed: dt.datetime | None, after_h: float | None, now: dt.datetime) -> tuple:
    """The plan (protocol_sections.PlanAssumptions) and the deadline as dates: a start at the report becomes `now`,
    its deadline `now` plus its hours."""
    if plan is None or plan.start != AT_REPORT:
        return plan, fixed
    return replace(plan, start=now), (now + dt.timedelta(hours=after_h) if after_h is not None else None)
