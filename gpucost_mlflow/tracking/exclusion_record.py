"""How an exclusion is kept on its pass: one JSON tag, `gpucost.exclusion` (`gpucost exclude`, tracking/exclusions.py).

Its own module so the descriptions can read it without the exclusions' store calls; passes excluded before the tag
existed carry each field as a tag of its own, which `details` reads too.
"""

from __future__ import annotations

import json

from gpucost_mlflow.tracking import schema

# The fields of an exclusion, and the tags that held them on passes excluded before `gpucost.exclusion`.
FIELDS = {"cause": schema.EXCLUDED_CAUSE, "by": schema.EXCLUDED_BY, "at": schema.EXCLUDED_AT,
          "status_before": schema.STATUS_BEFORE_EXCLUSION, "reason_before": schema.REASON_BEFORE_EXCLUSION,
          "undone": schema.EXCLUSION_UNDONE}


def details(tags: dict) -> dict[str, str]:
    """The pass's exclusion as recorded (every FIELDS key; all empty when never excluded, `cause` empty once
    undone): from its `gpucost.exclusion` tag, else from the tags a pass excluded before it carries."""
    text = tags.get(schema.EXCLUSION, "")
    if text:
        try:
            found = json.loads(text)
        except ValueError:
            found = {}
        found = found if isinstance(found, dict) else {}
        return {key: str(found.get(key, "") or "") for key in FIELDS}
    return {key: tags.get(tag, "") for key, tag in FIELDS.items()}


def encoded(fields: dict[str, str]) -> str:
    """An exclusion's tag value: its non-empty fields as JSON (`details` reads it back)."""
    return json.dumps({key: value for key, value in fields.items() if value}, ensure_ascii=False)
