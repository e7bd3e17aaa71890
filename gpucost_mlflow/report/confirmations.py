"""The confirmation runs of the chosen configurations read from the attempts table, their verdicts
(core/measurement/confirmation.py)."""

from __future__ import annotations

import pandas as pd

from gpucost_mlflow.core.measurement.confirmation import Confirmation, ConfirmationRun, confirm
from gpucost_mlflow.core.money.decision import Assessment, Configuration
from gpucost_mlflow.core.names import EXPECTED_IDS, MEASURED_TOTAL_S, PASS_S
from gpucost_mlflow.report.tables import IDENTITY
from gpucost_mlflow.tracking.schema import CONFIRMATION_ROLE


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def runs_of(table: pd.DataFrame, config: Configuration) -> list[ConfirmationRun]:
    """The confirmation runs of one configuration, oldest first: its device, variant and identity, on any corpus."""
    if "role" not in table or not len(table):
        return []
    mask = ((table["role"] == CONFIRMATION_ROLE) & (table["device"] == config.device)
            & (table["variant"] == config.variant))
    for key in IDENTITY if config.identity else ():
        if key != "corpus_fingerprint" and key in table:
            mask &= table[key].fillna("").astype(str) == getattr(config.identity, key)
    rows = table[mask].sort_values("start_time")
    total = rows[MEASURED_TOTAL_S] if MEASURED_TOTAL_S in rows else rows[PASS_S]
    return [ConfirmationRun(row.run_id, str(row.status), str(row.reason or ""),
                            int(row.expected) if _number(row.expected) else None, _number(row.pass_s),
                            _number(measured) if _number(measured) is not None else _number(row.pass_s))
            for row, measured in zip(rows.assign(expected=rows[EXPECTED_IDS]).itertuples(index=False), total)]


def verdicts(table: pd.DataFrame, chosen: list[Assessment], inputs_per_pass: int, min_s: float
             ) -> dict[str, Confirmation]:
    """Each chosen configuration's confirmation verdict, by its name."""
    return {a.configuration.name: confirm(a.configuration.durations.values, inputs_per_pass,
                                          runs_of(table, a.configuration), min_s) for a in chosen}
