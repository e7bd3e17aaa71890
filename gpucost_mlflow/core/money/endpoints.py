"""Hosted endpoints named by a protocol's `alternatives:`: a catalog of `api` rows (kind, provider, model, price per
million input and output tokens, currency, as_of, source), read and checked.

An api row is a price, never a result: no judged pass ran through it, so its quality is "not judged" and it is never
a candidate nor priced as one (report/alternatives.py lists it so). An endpoint enters the decision only as a
configuration measured through it and priced by a `billing: per_token` catalog row (core/money/billing/per_token.py).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.catalog import as_of_date, csv_rows

COLUMNS = ("kind", "provider", "model", "price_per_million_input", "price_per_million_output", "currency", "as_of",
           "source")
KIND = "api"
NOT_JUDGED = "not judged: no judged pass ran through it, so it is never a candidate"


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
            raise GpucostError(f"{path}: no api row for {', '.join(unknown)} (known: "
                               f"{', '.join(e.name for e in found)})")
        found = [e for e in found if e.name in names]
    if not found:
        raise GpucostError(f"{path}: no api rows")
    return found
