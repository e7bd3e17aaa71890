"""What the built-in classifier's child records of its predictions, after the clock: the labels file it exports and
the FLOP counts, rates and MFU of its batches (its `Work.export` and `Work.utilisation`)."""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.measurement import flops
from gpucost_mlflow.core.names import MFU_PADDED, MFU_USEFUL, TOKENS_INPUT, USEFUL_FLOP_PER_S
from gpucost_mlflow.workloads import encoder_flops


def write_predictions(path: Path, predictions, label_names: list[str], duplicate_at: int = 0) -> None:
    """One JSON line per prediction (id, label, score), gzip with a fixed mtime so equal passes give equal bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for number, (ident, label, score) in enumerate(zip(predictions.ids, predictions.labels, predictions.scores), 1):
            line = json.dumps({"id": ident, "label": label_names[label], "score": round(score, 6)}) + "\n"
            out.write(line.encode("utf-8"))
            if number == duplicate_at:
                out.write(line.encode("utf-8"))


MFU_METRICS = (MFU_USEFUL, MFU_PADDED)


def utilisation(config: dict, settings: Settings, device, predictions, pass_s: float | None) -> dict:
    """FLOP counts and rates of a completed pass, and MFU against the cached peak of its device and precision.

    Runs after the clock stopped. Every measurement left out has its reason in `missing_measurements`.
    """
    from gpucost_mlflow.execution import peak  # deferred: imports torch

    if pass_s is None:
        return {"missing_measurements": {key: "pass did not complete" for key in MFU_METRICS}}
    try:
        shape = encoder_flops.encoder_shape(config)
    except GpucostError as exc:
        return {"missing_measurements": {key: str(exc) for key in MFU_METRICS + (USEFUL_FLOP_PER_S,)}}
    precision = peak.precision_of(settings)
    found, why = peak.lookup(device, precision)
    result = {
        "metrics": {**flops.rates(encoder_flops.count(shape, predictions.batch_lengths()), pass_s,
                                  found.flop_per_s if found else None),
                    TOKENS_INPUT: float(sum(map(sum, predictions.batch_lengths())))},
        "peak": asdict(found) if found else {},
    }
    if found is None:
        result["missing_measurements"] = {key: why for key in MFU_METRICS}
    return result
