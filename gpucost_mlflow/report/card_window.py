"""The decision card's Window line: the forecast window in its parts, its slow end, one end time in one zone (from
now where the declared start is past), the deadline with its standing, how long the rate was seen to hold against the
hours the plan commits to, and the price of measuring; all read from the report and its decision."""

from __future__ import annotations

import datetime as dt

from gpucost_mlflow.core.inputs.plan_start import like
from gpucost_mlflow.core.money.decision import NO_DEADLINE, Assessment
from gpucost_mlflow.core.money.plans import to_hours
from gpucost_mlflow.report.model import Report


def lasting(report: Report, a: Assessment) -> str:
    """The method's caveat beside the window: how long the rate was seen to hold (the confirmation's seconds, else
    one benchmark pass's) against the hours the plan commits to; short runs do not show long-run stability."""
    found = report.confirmations.get(a.configuration.name)
    window = f"{a.forecast.high_hours:,.1f} h window"
    if found is not None and found.timed_s:
        seen = f"the confirmation timed {found.timed_s:,.0f} s of the {window}"
    elif a.configuration.measured_s:
        seen = f"no pass timed more than {max(a.configuration.measured_s):,.1f} s of the {window}"
    else:
        return ""
    return f"; {seen}: short runs do not show that a rate holds for hours (PROTOCOL.md)"


def measuring(report: Report) -> str:
    """The price of measuring beside the window: '; decided after 0.11 h of measuring (0.10 USD at this offer)', ''
    where no campaign recorded its hours (report/measuring.py)."""
    return f"; {report.spent.words(report.spent_price)}" if report.spent is not None else ""


def past_start(report: Report, a: Assessment):
    """The declared start when it is before the moment the report was read (None when it is not, or it is that
    moment: `plan.start: at_report`)."""
    start = a.rules.start if a.rules else None
    if start is None or report.start_at_report or report.read_at is None or start >= like(report.read_at, start):
        return None
    return start


def _minutes(moment: dt.datetime, zone: dt.datetime | None = None) -> str:
    """A moment to the minute, in the zone of `zone` where both carry one: the card's one zone."""
    if zone is not None and zone.tzinfo is not None and moment.tzinfo is not None:
        moment = moment.astimezone(zone.tzinfo)
    return moment.isoformat(timespec="minutes")


def _parts(f) -> str:
    """The window's parts: declared setup and waiting, the comparison passes, the deliverables, and the start-up
    (with the shape setup of each worker process, issue 62) with whatever else the forecast adds (audits, an
    engine's conversion)."""
    setup = f.setup_h + f.waiting_h
    rest = f.hours - setup - f.comparisons_h - f.deliverables_h
    label = "start-up" if not (f.audit or f.conversion_h) else "start-up, audits and conversion"
    return ", ".join(part for part in (
        f"{setup:,.1f} h declared setup and waiting" if setup else "",
        f"{_span(f.comparisons_h)} comparison passes",
        f"{_span(f.deliverables_h)} for {f.deliverables:,} deliverable{'s' if f.deliverables != 1 else ''}",
        f"{_span(max(rest, 0.0))} {label}{_shape_setup(f)}" if rest >= 0.05 or _shape_setup(f) else "") if part)


def _span(hours: float) -> str:
    """A part of the window in the unit that shows it: '2.0 h', else '14 min', else '8 s' (never '0.0 h')."""
    if hours >= 0.05:
        return f"{hours:,.1f} h"
    return f"{hours * 60:,.0f} min" if hours * 60 >= 1 else f"{hours * 3600:,.0f} s"


def window(report: Report, a: Assessment) -> str:
    """The forecast window in its parts, its slow end (what the plan covers), one end time in one zone (from now,
    where the declared start is past), and the deadline with its standing."""
    f = a.forecast
    dl = a.rules.deadline if a.rules else None
    start = past_start(report, a)
    if start is not None:
        from_now = like(report.read_at, start) + dt.timedelta(hours=f.high_hours)
        end = f", ends by {_minutes(from_now, dl or start)} if started now (the declared start is past)"
    else:
        end = f", ends by {_minutes(a.forecast_end_high, dl)}" if a.forecast_end_high else ""
        if report.start_at_report and a.forecast_end_high and report.read_at:
            end += f" from this report's reading at {_minutes(report.read_at, dl)}"
    if report.deadline == NO_DEADLINE or dl is None:
        deadline = NO_DEADLINE if report.deadline == NO_DEADLINE else f"deadline {report.deadline}"
        deadline += f" ({a.deadline_status or 'not checked'})" if report.deadline != NO_DEADLINE else ""
    elif start is not None:
        now_met = "met" if from_now <= dl else "missed"
        deadline = (f"deadline {_minutes(dl)} ({a.deadline_status or 'not checked'} from the declared start "
                    f"{_minutes(start, dl)}, {now_met} started now)")
    else:
        deadline = f"deadline {_minutes(dl)} ({a.deadline_status or 'not checked'})"
    bound = a.plan.window_hours if a.plan is not None else None
    own = (f"; the plan is bound by its own {float(bound):,.1f} h window, not the measured rate"
           if bound is not None and bound != to_hours(f.high_hours) else "")
    return f"{f.hours:,.1f} h forecast ({_parts(f)}), {f.high_hours:,.1f} h at the slowest pass{end}{own}; {deadline}"


def _shape_setup(f) -> str:
    """', of it 2 x 36 s shape setup, once per worker process' where the passes' first laps paid one (issue 62)."""
    seconds = f.shape_setup_each_h * 3600
    if seconds <= 0:
        return ""
    starts = f.children(f.deliverables) + f.restarts
    return f", of it {starts:,} x {seconds:,.3g} s shape setup, once per worker process"
