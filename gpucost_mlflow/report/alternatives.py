"""The report's hosted-endpoint lines: each endpoint the protocol names under `alternatives:`, listed "not judged".

No judged pass ran through an api row, so its outputs were never checked against the protocol's bars: it is never a
candidate and is given no figure that could read as a choice (no cost for the volume, no volume from which renting is
cheaper). An endpoint is compared by running the variant through it and pricing that configuration with a
`billing: per_token` catalog row (core/money/billing/per_token.py), which the ordinary choice then weighs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.money.billing.per_token import rate
from gpucost_mlflow.core.money.decision import Assessment
from gpucost_mlflow.core.money.endpoints import NOT_JUDGED, load_endpoints

TITLE = "Hosted endpoints (not judged)"
TEXT = (f"Each endpoint the protocol names under alternatives, with its list price; {NOT_JUDGED}. To compare one, run "
        "the variant through it (`engine: openai`) and price that configuration with a `billing: per_token` catalog "
        "row (its list or batch tier): the decision then weighs it beside renting, on judged passes "
        "(docs/costs.md, \"Per-token tiers\").")

ELSEWHERE_TITLE = "Hosted prices for work measured here (what-if)"
ELSEWHERE_TEXT = ("Each per-token catalog row that names a device passes ran on here. A hosted price applies only to "
                  "work that provider's endpoint did: its model's precision, tokenizer, token counts and speed are its "
                  "own, and a name proves no environment. So the row prices nothing here and is never committed; it "
                  "says what would measure it (docs/costs.md, \"Per-token tiers\").")


def elsewhere_lines(assessments: list[Assessment]) -> list[str]:
    """Every what-if line of the assessed configurations: a per-token row naming a device measured here."""
    return [line for a in assessments for line in a.what_if]


def endpoint_lines(protocol: Protocol, today: dt.date, allow_stale: bool = False) -> list[str]:
    """One line per endpoint the protocol names: not judged, its list price and age, never a cost or a comparison
    ([] when the protocol names no alternatives)."""
    declared = protocol.alternatives
    if not declared:
        return []
    lines = []
    for e in load_endpoints(Path(declared.catalog), list(declared.endpoints)):
        age = (today - e.as_of).days
        stale = (f"; stale price ({age} days > max_price_age_days {protocol.max_price_age_days})"
                 if protocol.max_price_age_days is not None and age > protocol.max_price_age_days and not allow_stale
                 else "")
        lines.append(f"{e.name} ({e.source}; as of {e.as_of.isoformat()}, {age} days{stale}): not judged: no judged "
                     f"pass ran through it, never a candidate; list price {rate(e.input_per_million)}/"
                     f"{rate(e.output_per_million)} {e.currency} per million input/output tokens")
    return lines
