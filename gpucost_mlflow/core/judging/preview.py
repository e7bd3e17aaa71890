"""A pass's predictions in short for the MLflow UI: the failed ones first, then a sample of the right ones.

The gzip predictions file stays the full record; this preview is what a reader opens first. It is a
table in pandas' `split` layout ({"columns": [...], "data": [[...], ...]}), the layout `mlflow.log_table`
writes, so the UI's artifact view shows it as a table.
"""

from __future__ import annotations

from collections.abc import Sequence

COLUMNS = ["id", "outcome", "gold", "predicted", "bucket", "text"]
FAILED_ROWS = 50
SAMPLE_ROWS = 25
TEXT_CHARS = 160


def _short(text: str, limit: int = TEXT_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preview(rows: Sequence[dict], predicted: dict[str, str], gold_labels: bool = True,
            failed_rows: int = FAILED_ROWS, sample_rows: int = SAMPLE_ROWS,
            outputs: dict[str, str] | None = None) -> dict:
    """Missing, unexpected and wrong predictions first (corpus order), then evenly spaced right (or unlabelled) ones.
    With `outputs` (a generation pass's text per id) an `output` column shows what the model wrote."""
    failed, rest = [], []
    for row in rows:
        label = predicted.get(row["id"])
        gold = row.get("label", "") if gold_labels else ""
        if label is None:
            outcome = "missing"
        elif not gold_labels:
            outcome = "no gold label"
        else:
            outcome = "right" if label == gold else "wrong"
        record = [row["id"], outcome, gold, label or "", row.get("bucket", ""), _short(row.get("text", ""))]
        (failed if outcome in ("missing", "wrong") else rest).append(record)
    known = {row["id"] for row in rows}
    failed += [[ident, "unexpected id", "", label, "", ""] for ident, label in predicted.items() if ident not in known]
    step = max(1, len(rest) // sample_rows) if sample_rows else 0
    sample = rest[::step][:sample_rows] if step else []
    data = failed[:failed_rows] + sample
    if outputs is None:
        return {"columns": list(COLUMNS), "data": data}
    return {"columns": [*COLUMNS, "output"], "data": [[*record, _short(outputs.get(record[0], ""))] for record in data]}
