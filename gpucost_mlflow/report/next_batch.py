"""The next batch size a starved configuration is worth trying, said beside its starved flag in the summary.

A starved pass left its device mostly idle: a larger batch gives it more work per launch. The size is the
configuration's batch doubled (core/campaign/batch_series.py `next_batch`), unless the memory estimate says it will
not fit: twice the largest device-memory peak measured (an upper bound: activations double with the batch, weights
do not) against the device's memory in the shipped device table (`catalog/device-specs-<date>.csv`, matched by the
device's name). A device the table does not name, a CPU included, gets the size without a fit check.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import pandas as pd

from gpucost_mlflow.core.campaign.batch_series import next_batch
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import devices
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.money.market import load_device_names
from gpucost_mlflow.report.measured import attempts_in
from gpucost_mlflow.tracking.attempts_table import Attempt

DEVICE_PEAKS = ("mem_peak_reserved_bytes", "mem_peak_allocated_bytes")  # device memory, reserved first (the larger)
BASIS = "twice the measured peak"


@functools.lru_cache(maxsize=1)
def _tables() -> devices.Tables | None:
    try:
        return devices.Tables(devices.load_device_specs([shipped.shipped(shipped.DEVICE_SPECS)]),
                              load_device_names([shipped.shipped(shipped.DEVICE_NAMES)]))
    except (GpucostError, OSError):
        return None


def device_bytes(device: str) -> float | None:
    """The memory of the device named so (as its driver names it), from the shipped device table; None when unknown."""
    tables = _tables()
    if tables is None or not device:
        return None
    spec, _ = devices.spec_for(tables, "", [device])
    return spec.memory_gib * 2**30 if spec else None


def batch_of(attempts: Sequence[Attempt] | pd.DataFrame) -> int | None:
    """The configuration's batch size, from its attempts' settings; None when none records one."""
    return next((a.batch_size for a in attempts_in(attempts) if a.batch_size is not None), None)


def text(batch: int | None, memory: Mapping[str, float], device: str) -> str:
    """'next batch size worth trying: 16', or that it will not fit; '' without a batch size."""
    if batch is None:
        return ""
    peak = next((memory[key] for key in DEVICE_PEAKS if memory.get(key)), None)
    capacity = device_bytes(device)
    estimate = 2 * peak if peak is not None and capacity is not None else None
    return next_batch(batch, estimate, capacity, BASIS).text()
