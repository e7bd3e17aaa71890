"""Why a pass may be excluded (PROTOCOL.md §6): one reason from a fixed list, so one rule can be seen applied alike.

Four reasons are the flags a pass's durations can carry (contended, throttled, starved, cold_shapes); `operator`
is any other documented external cause and needs its note. Passes excluded before the list existed carry a free-text
cause: they read as `operator` with that text as their note. Pure: no mlflow.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError

FLAGS = ("contended", "throttled", "starved", "cold_shapes")  # the attempts table's columns of the same names
OPERATOR = "operator"  # a cause no flag records: what the operator saw (host maintenance, another job), in its note
REASONS = (*FLAGS, OPERATOR)


@dataclass(frozen=True)
class ExclusionReason:
    """One exclusion's reason (one of REASONS) and its note ('' when none was given)."""

    reason: str
    note: str = ""

    def line(self) -> str:
        """'contended', 'contended: other job 61 % CPU' or 'operator: host maintenance at 10:02'."""
        return f"{self.reason}: {self.note}" if self.note else self.reason


def allowed() -> str:
    """The reasons as the CLI names them in its help and its errors."""
    return ", ".join(REASONS)


def reason_of(reason: str | None, note: str | None = None, note_limit: int | None = None) -> ExclusionReason:
    """The reason as given, checked: one of REASONS, `operator` with a note, the note on one line within
    note_limit characters; anything else is a one-line GpucostError."""
    name = (reason or "").strip().lower()
    text = " ".join((note or "").split())
    if not name:
        raise GpucostError(f"an exclusion needs its reason (--reason, one of: {allowed()}); nothing changed")
    if name not in REASONS:
        raise GpucostError(f"unknown exclusion reason '{' '.join(name.split())[:40]}': one of {allowed()}; "
                           "nothing changed")
    if name == OPERATOR and not text:
        raise GpucostError("--reason operator needs its documented cause as --note TEXT (e.g. 'host maintenance at "
                           "10:02'); nothing changed")
    if note_limit is not None and len(text) > note_limit:
        raise GpucostError(f"the note is {len(text)} characters, at most {note_limit}; nothing changed")
    return ExclusionReason(name, text)


def recorded(reason: str, note: str, cause: str) -> ExclusionReason:
    """An exclusion's reason as a store holds it, never refused: a known reason with its note; a free-text cause
    recorded before the list (or a reason this version does not know) reads as `operator`, its text the note."""
    if reason in REASONS:
        return ExclusionReason(reason, note)
    return ExclusionReason(OPERATOR, cause or ": ".join(part for part in (reason, note) if part))
