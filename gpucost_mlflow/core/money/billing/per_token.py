"""Billing `per_token`: a hosted API serving the measured configuration, paid per million input and output tokens, in
its `list` tier (answers at the measured rate) or its `batch` tier (cheaper, done within a completion window).

A row prices only a configuration whose passes ran through that provider's endpoint (an `engine: openai` variant
whose base_url is the provider's, or `gpucost hosted batch-import`): its device is `endpoint <host>`, which the row's
device_names list. Work measured on a machine here is never committed at a hosted rate; the row is a what-if beside it.

The planned volume costs planned inputs x (prompt tokens per input x input price + generated tokens per input x output
price) / 1e6, from the tokens the configuration's accepted passes counted; without them the row prices nothing and
says why. A list tier's window is the forecast window, as for an hourly row; a batch tier's is setup + its completion
window (the provider may take all of it), refused when that does not fit the deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.endpoint import REMOTE, is_remote
from gpucost_mlflow.core.money.billing.base import Billing, Cover, Terms, number, to_hours

MILLION = Decimal(1_000_000)
LIST, BATCH = "list", "batch"
TIERS = (LIST, BATCH)
PRICES = ("price_per_million_input", "price_per_million_output")
HOUR_STEP = (1.0, 0.0)  # its cost grows with every input: break-even and the cost curve read it hour by hour


@dataclass(frozen=True)
class PerTokenTerms(Terms):
    """A per_token row's prices per million input and output tokens, its tier (list or batch) and a batch tier's
    completion window (None on the list tier)."""

    input_per_million: Decimal
    output_per_million: Decimal
    tier: str
    completion_window_hours: Decimal | None = None


def rate(value: Decimal) -> str:
    """A price per million tokens with at least two decimals: '0.60', '0.075', '2.00'."""
    return f"{value:.2f}" if value == value.quantize(CENT) else f"{value.normalize():f}"


def _hours(value: float | Decimal) -> str:
    return f"{round(float(value), 2):,g}"


def _price(path, line, column: str, text: str) -> Decimal:
    if not text:
        raise GpucostError(f"{path}:{line}: empty {column} (a per_token row prices input and output tokens)")
    value = number(path, line, column, text)
    if value < 0:
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not a price >= 0")
    return value


class PerTokenBilling(Billing):
    name = "per_token"
    verb = "Pay per token"
    per_lot = False
    spare_capacity = False
    columns = (*PRICES, "tier", "completion_window_hours")

    def read(self, path, line, values):
        for column in ("days", "price_per_lot"):
            if values.get(column):
                raise GpucostError(f"{path}:{line}: {column} must be empty on a per_token row (it prices tokens: "
                                   "price_per_million_input, price_per_million_output)")
        tier = values.get("tier", "")
        if tier not in TIERS:
            raise GpucostError(f"{path}:{line}: tier '{tier}' is not list or batch (a per_token row's tier)")
        window = values.get("completion_window_hours", "")
        if tier == LIST and window:
            raise GpucostError(f"{path}:{line}: completion_window_hours is for a batch tier, this row is the list tier")
        if tier == BATCH:
            if not window:
                raise GpucostError(f"{path}:{line}: empty completion_window_hours (a batch tier's time bound)")
            hours = number(path, line, "completion_window_hours", window)
            if hours <= 0:
                raise GpucostError(f"{path}:{line}: completion_window_hours '{window}' must be > 0")
        prices = [_price(path, line, column, values.get(column, "")) for column in PRICES]
        hours = number(path, line, "completion_window_hours", window) if window else None
        return {"days": None, "terms": PerTokenTerms(*prices, tier, hours)}

    def elsewhere(self, offer, device, variant):
        if is_remote(device):
            return ""
        return (f"{variant} was timed and judged on {device}, not through {offer.provider}'s endpoint (a hosted "
                f"model's precision, tokens and speed are its own); a variant of {variant} on `engine: openai` whose "
                f"endpoint.base_url is {offer.provider}'s API, priced by a row whose device_names lists "
                f"`{REMOTE}<its host>`, or `gpucost hosted batch-import` of its batch output, would measure it")

    def refusal(self, offer, work):
        if work.inputs is None:
            return "not priced per token: no planned inputs (the protocol's corpus.size)"
        if work.prompt_tokens is None:
            return "not priced per token: no accepted pass counted its prompt tokens (tokens_prompt)"
        if work.generated_tokens is None and offer.terms.output_per_million:
            return "not priced per token: no accepted pass counted its generated tokens (tokens_generated)"
        window = self.window(offer, Decimal(0), work)
        if offer.terms.tier == BATCH and work.deadline_h is not None and window > to_hours(work.deadline_h):
            setup = f" after {_hours(work.setup_h)} h setup" if work.setup_h else ""
            return (f"infeasible: batch tier's {_hours(offer.terms.completion_window_hours)} h completion "
                    f"window{setup} does not fit the {_hours(work.deadline_h)} h deadline")
        return ""

    def window(self, offer, hours, work):
        if offer.terms.tier == BATCH:
            return to_hours(work.setup_h) + offer.terms.completion_window_hours
        return hours

    def cover(self, offer, hours, lots, deliverable_h, work):
        per_input = (offer.terms.input_per_million * Decimal(repr(work.prompt_tokens))
                     + offer.terms.output_per_million * Decimal(repr(work.generated_tokens or 0.0))) / MILLION
        # Up to the cent: a commitment under a cent is not 0.00 (a few inputs through a cheap tier), it is one cent.
        return Cover(1, None, hours, (per_input * work.inputs).quantize(CENT, rounding=ROUND_CEILING))

    def step_hours(self, offer):
        return HOUR_STEP

    def price(self, offer):
        return (f"{rate(offer.terms.input_per_million)}/{rate(offer.terms.output_per_million)} {offer.currency} per "
                "million input/output tokens")

    def _bound(self, offer) -> str:
        if offer.terms.tier == BATCH:
            return f" ({_hours(offer.terms.completion_window_hours)} h completion window)"
        return ""

    def billed_as(self, offer):
        return f"{offer.terms.tier} tier"

    def describe(self, offer):
        return f"{offer.gpu} {offer.terms.tier} tier per token{self._bound(offer)}, {self.price(offer)}"

    def head(self, plan, lots):
        return f"{plan.offer.gpu} {plan.offer.terms.tier} tier{self._bound(plan.offer)}, {self.price(plan.offer)}"

    def tail(self, plan):
        work = plan.work
        tokens = f"{work.prompt_tokens:,.1f} prompt" + (f" and {work.generated_tokens:,.1f} generated"
                                                          if work.generated_tokens is not None else "")
        if plan.offer.terms.tier == BATCH:
            when = (f", done within {_hours(plan.window_hours)} h ({_hours(work.setup_h)} h setup + the batch tier's "
                    f"{_hours(plan.offer.terms.completion_window_hours)} h completion window, the provider's bound)")
        else:
            when = ", at the measured rate"
        return f" for {work.inputs:,} planned inputs at {tokens} tokens each (measured){when}"


PER_TOKEN = PerTokenBilling()
