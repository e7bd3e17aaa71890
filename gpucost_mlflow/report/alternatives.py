"""The report's hosted-endpoint lines: the same deliverables priced per token through each endpoint the protocol
names under `alternatives:`, beside the rental the decision commits to, and the volume from which renting is cheaper.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.money import costs
from gpucost_mlflow.core.money.breakeven import Priced
from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.decision import Assessment
from gpucost_mlflow.core.money.endpoints import QUALITY, load_endpoints, renting_cheaper_from
from gpucost_mlflow.report import standing

TITLE = "Hosted endpoints (the same deliverables paid per token)"
TEXT = ("Each endpoint the protocol names under alternatives, priced for the declared deliverables from the tokens "
        "the accepted passes counted (input: the tokenizer's real tokens; output: the generated tokens, or the "
        f"protocol's declared output_tokens_per_input), against the rental the decision commits to; {QUALITY}.")


def _rental(assessments: list[Assessment], choice: Choice) -> Assessment | None:
    """The rental compared: the chosen configuration, else the cheapest priced one that can be committed to (never one
    whose price is withheld: report/standing.py)."""
    if choice.decided:
        return choice.chosen[0]
    priced = [a for a in assessments if a.committed is not None and not standing.withheld(a, choice)]
    return min(priced, key=lambda a: a.committed) if priced else None


def endpoint_lines(assessments: list[Assessment], choice: Choice, protocol: Protocol, today: dt.date,
                   allow_stale: bool = False) -> list[str]:
    """One line per endpoint: its price for the declared volume, the rental's, and where renting becomes cheaper
    (or why it is not compared). [] when the protocol names no alternatives."""
    declared = protocol.alternatives
    if not declared:
        return []
    endpoints = load_endpoints(Path(declared["catalog"]), declared["endpoints"])
    rental = _rental(assessments, choice)
    if rental is None:
        return [f"{e.name}: not compared: no configuration that can be committed to is priced" for e in endpoints]
    c = rental.configuration
    inputs, deliverables = protocol.corpus_size, protocol.deliverables["expected"]
    output = c.output_tokens_per_input or declared["output_tokens_per_input"]
    lines = []
    for e in endpoints:
        age = (today - e.as_of).days
        head = f"{e.name} ({e.source}; as of {e.as_of.isoformat()}, {age} days)"
        if e.currency != rental.currency:
            raise GpucostError(f"{declared['catalog']}:{e.line}: {e.name} is priced in {e.currency}, the rental in "
                               f"{rental.currency}; one comparison uses one currency")
        if protocol.max_price_age_days is not None and age > protocol.max_price_age_days and not allow_stale:
            lines.append(f"{head}: not priced: stale price ({age} days > max_price_age_days "
                         f"{protocol.max_price_age_days}; --allow-stale-prices prices it anyway)")
            continue
        if c.input_tokens_per_input is None:
            lines.append(f"{head}: not priced: no accepted pass of {c.name} counted its input tokens")
            continue
        if output is None:
            lines.append(f"{head}: not priced: output tokens per input neither measured (no generated text) nor "
                         "declared (alternatives.output_tokens_per_input)")
            continue
        cost = e.cost(deliverables * inputs, c.input_tokens_per_input, output)
        rent = Priced(c.name, rental.forecast, tuple(p.offer for p in rental.plans), c.gpus)
        cheaper = renting_cheaper_from(rent, e, inputs, c.input_tokens_per_input, output)
        where = (f"renting is cheaper from {cheaper:,} deliverables" if cheaper is not None
                 else "the endpoint stays cheaper at every volume searched")
        lines.append(f"{head}: {deliverables:,} deliverable(s) of {inputs:,} inputs at {c.input_tokens_per_input:,.1f} "
                     f"input and {output:,.1f} output tokens per input cost {costs.money(cost, e.currency)} "
                     f"(at {e.input_per_million:g} / {e.output_per_million:g} {e.currency} per million input / output "
                     f"tokens), against {costs.money(rental.committed, rental.currency)} renting {c.name}; {where} "
                     "(slowest-pass forecast)")
    return lines
