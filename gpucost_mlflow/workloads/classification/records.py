"""What the built-in classifier's child records of its predictions, after the clock: the labels file it exports and
the FLOP counts, rates and MFU of its batches (its `Work.export` and `Work.utilisation`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.measurement import flops
from gpucost_mlflow.core.names import MFU_PADDED, MFU_USEFUL, TOKENS_INPUT, USEFUL_FLOP_PER_S
from gpucost_mlflow.execution import batching
from gpucost_mlflow.workloads import encoder_flops
from gpucost_mlflow.workloads.classification.output import write_labels


def write_predictions(path: Path, predictions, label_names: list[str], duplicate_at: int = 0) -> None:
    """The predictions (id, label, score) through the labels file's one writer (output.write_labels)."""
    write_labels(path, _records(predictions, label_names, duplicate_at))


def _records(predictions, label_names: list[str], duplicate_at: int) -> Iterator[dict]:
    """One record per prediction, in order; the `duplicate_at`th twice (the injected duplicate-id fault)."""
    for number, (ident, label, score) in enumerate(zip(predictions.ids, predictions.labels, predictions.scores), 1):
        record = {"id": ident, "label": label_names[label], "score": round(score, 6)}
        yield record
        if number == duplicate_at:
            yield record


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
        "metrics": {**flops.rates(encoder_flops.count(shape, predictions.batch_lengths(),
                                                      lambda lengths: batching.width(lengths, settings)),
                                  pass_s, found.flop_per_s if found else None),
                    TOKENS_INPUT: float(sum(map(sum, predictions.batch_lengths())))},
        "peak": asdict(found) if found else {},
    }
    if found is None:
        result["missing_measurements"] = {key: why for key in MFU_METRICS}
    return result
