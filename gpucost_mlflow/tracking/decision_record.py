"""What a decision run records, as one plain record: the report's layer makes it (report/decided.py) and
tracking/decision_run.py writes it. No MLflow here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Decided:
    """What a decision run records: its name, the protocol digest it decided under, its tags, params and metrics, its
    files, each pass's standing in it (run id -> its configuration's standing) and committed cost (run id -> (metric
    key with its currency, amount)), the currency gpucost's views show ('' to leave them as they are) and each
    confirmation run's verdict."""

    name: str
    protocol_digest: str
    tags: dict[str, str]
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    standings: dict[str, str] = field(default_factory=dict)
    committed: dict[str, tuple[str, float]] = field(default_factory=dict)
    currency: str = ""
    # each confirmation run it read (run id -> its outcome in this decision, its rate over the slowest benchmark pass's)
    confirmations: dict[str, tuple[str, float | None]] = field(default_factory=dict)
