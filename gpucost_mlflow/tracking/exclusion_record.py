"""How an exclusion is kept on its pass: one JSON tag, `gpucost.exclusion` (`gpucost exclude`, tracking/exclusions.py).

Its own module so the descriptions can read it without the exclusions' store calls; passes excluded before the tag
existed carry each field as a tag of its own, which `details` reads too. The reason (core/judging/exclusion_reasons.py)
and its note are kept beside the cause, the line every reader shows; a cause recorded before reasons existed reads as
reason `operator` with the cause as its note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpucost_mlflow.core.judging.exclusion_reasons import recorded
from gpucost_mlflow.core.records import Keyed, Record
from gpucost_mlflow.tracking import schema

# The fields of an exclusion, and the tags that held them on passes excluded before `gpucost.exclusion`.
FIELDS = {"cause": schema.EXCLUDED_CAUSE, "by": schema.EXCLUDED_BY, "at": schema.EXCLUDED_AT,
          "status_before": schema.STATUS_BEFORE_EXCLUSION, "reason_before": schema.REASON_BEFORE_EXCLUSION,
          "undone": schema.EXCLUSION_UNDONE}


REASON_FIELDS = ("reason", "note")  # written only since reasons exist, in `gpucost.exclusion` alone


@dataclass(frozen=True)
class Exclusion(Keyed, Record):
    """One pass's exclusion as recorded: the cause line its reason and note make, who and when, the status and reason
    it had before, the trace of an undo (each '' when not recorded); and, read from its run, the pass it belongs to."""

    cause: str = ""
    by: str = ""
    at: str = ""
    status_before: str = ""
    reason_before: str = ""
    undone: str = ""
    reason: str = ""  # of the fixed list (core/judging/exclusion_reasons.py)
    note: str = ""
    run_id: str = ""
    experiment_id: str = ""
    variant: str = ""
    device: str = ""


def details(tags: dict) -> Exclusion:
    """The pass's exclusion as recorded (all empty when never excluded, `cause` and `reason` empty once undone): from
    its `gpucost.exclusion` tag, else from the tags a pass excluded before it carries."""
    text = tags.get(schema.EXCLUSION, "")
    if text:
        try:
            found = json.loads(text)
        except ValueError:
            found = {}
        found = found if isinstance(found, dict) else {}
        read = {key: str(found.get(key, "") or "") for key in (*FIELDS, *REASON_FIELDS)}
    else:
        read = {**{key: tags.get(tag, "") for key, tag in FIELDS.items()}, "reason": "", "note": ""}
    if read["cause"] or read["reason"]:
        why = recorded(read["reason"], read["note"], read["cause"])
        read.update(reason=why.reason, note=why.note, cause=read["cause"] or why.line())
    return Exclusion(**read)


def encoded(fields: dict[str, str]) -> str:
    """An exclusion's tag value: its non-empty fields as JSON (`details` reads it back)."""
    return json.dumps({key: value for key, value in fields.items() if value}, ensure_ascii=False)
