"""Hosted endpoints: the same open model paid per token instead of renting, priced from the measured token counts.

A catalog of `api` rows (kind, provider, model, price per million input and output tokens, currency, as_of,
source) is named by a protocol's `alternatives:`. The same deliverables are priced through each endpoint, and the
volume at which renting becomes cheaper is found on the rental's step-shaped committed cost (core/money/breakeven.py
`Priced`). The endpoint's quality is assumed equal to the reference: it is not judged here, and the report says so.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.breakeven import MAX_POINTS, MAX_VOLUME, Priced
from gpucost_mlflow.core.money.catalog import as_of_date, csv_rows
from gpucost_mlflow.core.money.costs import CENT

COLUMNS = ("kind", "provider", "model", "price_per_million_input", "price_per_million_output", "currency", "as_of",
           "source")
KIND = "api"
QUALITY = "the endpoint's quality is assumed equal to the reference's: it is not judged here"


@dataclass(frozen=True)
class Endpoint:
    """One hosted endpoint's price list row."""

    provider: str
    model: str
    input_per_million: Decimal
    output_per_million: Decimal
    currency: str
    as_of: dt.date
    source: str
    line: int

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.model}"

    def per_input(self, input_tokens: float, output_tokens: float) -> Decimal:
        """What one input costs through the endpoint (not rounded)."""
        return (self.input_per_million * Decimal(repr(input_tokens))
                + self.output_per_million * Decimal(repr(output_tokens))) / Decimal(1_000_000)

    def cost(self, inputs: int, input_tokens: float, output_tokens: float) -> Decimal:
        """What `inputs` inputs cost through the endpoint, to the cent."""
        return (self.per_input(input_tokens, output_tokens) * inputs).quantize(CENT, rounding=ROUND_HALF_UP)


def _price(path: Path, line: int, column: str, text: str) -> Decimal:
    if not text:
        raise GpucostError(f"{path}:{line}: empty {column} (an api row prices input and output tokens)")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not a number") from None
    if not value.is_finite() or value < 0:
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not a price >= 0")
    return value


def load_endpoints(path: Path, names: list[str] | None = None) -> list[Endpoint]:
    """The api rows of a catalog file (those named, provider/model, when names are given); one-line errors."""
    reader = csv_rows(path, COLUMNS, "endpoint catalog (protocol alternatives.catalog)")
    found = []
    for record in reader:
        line = reader.line_num
        values = {c: (record.get(c) or "").strip() for c in COLUMNS}
        if values["kind"] != KIND:
            raise GpucostError(f"{path}:{line}: kind '{values['kind']}' (an endpoint catalog holds kind api rows)")
        for column in ("provider", "model", "currency", "as_of", "source"):
            if not values[column]:
                raise GpucostError(f"{path}:{line}: empty {column}")
        as_of = as_of_date(path, line, values["as_of"])
        found.append(Endpoint(values["provider"], values["model"],
                              _price(path, line, "price_per_million_input", values["price_per_million_input"]),
                              _price(path, line, "price_per_million_output", values["price_per_million_output"]),
                              values["currency"].upper(), as_of, values["source"], line))
    if names:
        unknown = sorted(set(names) - {e.name for e in found})
        if unknown:
            raise GpucostError(f"{path}: no api row for {', '.join(unknown)} (known: {', '.join(e.name for e in found)})")
        found = [e for e in found if e.name in names]
    if not found:
        raise GpucostError(f"{path}: no api rows")
    return found


def renting_cheaper_from(rent: Priced, endpoint: Endpoint, inputs_per_deliverable: int, input_tokens: float,
                         output_tokens: float, limit: int = MAX_VOLUME) -> int | None:
    """The smallest volume (deliverables) from which the rental's committed cost is below the endpoint's; None when
    the endpoint stays cheaper up to the volumes searched."""
    per_deliverable = float(endpoint.per_input(input_tokens, output_tokens)) * inputs_per_deliverable
    if per_deliverable <= 0:
        return None
    limit = min(limit, rent.reach(MAX_POINTS // (2 * len(rent.offers))))
    points = sorted(rent.thresholds(limit) | {1, limit})
    for start, end in zip(points, points[1:] + [limit + 1]):
        constant = float(rent.cost(start))  # the rental's cost holds between two thresholds
        volume = max(start, math.floor(constant / per_deliverable) + 1)
        if volume < end and float(rent.cost(volume)) < per_deliverable * volume:
            return volume
    return None
