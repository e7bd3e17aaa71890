"""The device table `gpucost fleet plan` bounds an offer by: each GPU type's memory, dense peak per precision and
memory bandwidth, dated and sourced (`catalog/device-specs-<date>.csv`, docs/catalogs.md), read and matched to a
catalog row's GPU or a measured device's name; pure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.billing.base import number
from gpucost_mlflow.core.money.catalog import as_of_date, csv_rows
from gpucost_mlflow.core.money.market import MEMORY_TOLERANCE_GIB, NamesRow

# The device table's peak columns, dense (without structured sparsity), in TFLOP/s (TOPS for int8).
PEAK_COLUMNS = {"fp32": "fp32_tflops", "tf32": "tf32_tflops", "bf16": "bf16_tflops", "fp16": "fp16_tflops",
                "fp8": "fp8_tflops", "int8": "int8_tops"}
SPEC_COLUMNS = ("accelerator", "memory_gib", *PEAK_COLUMNS.values(), "memory_bandwidth_gbps", "as_of", "source")
NO_QUANTIZATION = "none"


@dataclass(frozen=True)
class DeviceSpec:
    """One row of the device table: a GPU type's memory, dense peak per precision and bandwidth, dated and sourced."""

    accelerator: str  # SkyPilot's name, as in the device names table
    memory_gib: float
    peaks: tuple[tuple[str, float | None], ...]  # (precision, TFLOP/s); None: the vendor publishes no figure
    bandwidth_gbps: float
    as_of: dt.date
    source: str
    table: str  # the file it was read from

    def peak(self, precision: str) -> float | None:
        """The dense peak at this precision in TFLOP/s (TOPS for int8); None where the table has no figure."""
        return dict(self.peaks).get(precision)

    @property
    def label(self) -> str:
        """'A100 (40 GiB)': the row as the plan names it."""
        return f"{self.accelerator} ({self.memory_gib:g} GiB)"


def _peak(path: Path, line: int, column: str, text: str) -> float | None:
    """A peak cell: empty when the vendor publishes no figure, never 0."""
    if not text:
        return None
    value = number(path, line, column, text)
    if value <= 0:
        raise GpucostError(f"{path}:{line}: {column} '{text}' must be > 0 (leave the cell empty when there is no "
                           "figure)")
    return float(value)


def load_device_specs(paths: Sequence[Path]) -> list[DeviceSpec]:
    """The device table: the shipped one, then the user's (a later row for the same accelerator and memory replaces an
    earlier one); every problem is one line naming file and line."""
    rows: dict[tuple[str, float], DeviceSpec] = {}
    for path in paths:
        reader = csv_rows(path, SPEC_COLUMNS, "device table")
        for record in reader:
            line = reader.line_num
            values = {k: (v or "").strip() for k, v in record.items() if k}
            if not values["accelerator"] or not values["source"]:
                raise GpucostError(f"{path}:{line}: empty accelerator or source")
            memory = _peak(path, line, "memory_gib", values["memory_gib"])
            bandwidth = _peak(path, line, "memory_bandwidth_gbps", values["memory_bandwidth_gbps"])
            as_of = as_of_date(path, line, values["as_of"])
            if memory is None or bandwidth is None or as_of is None:
                raise GpucostError(f"{path}:{line}: memory_gib, memory_bandwidth_gbps and as_of are required")
            peaks = tuple((precision, _peak(path, line, column, values[column]))
                          for precision, column in PEAK_COLUMNS.items())
            if all(value is None for _, value in peaks):
                raise GpucostError(f"{path}:{line}: {values['accelerator']} has no peak at any precision")
            spec = DeviceSpec(values["accelerator"], memory, peaks, bandwidth, as_of, values["source"], path.name)
            rows[(spec.accelerator.lower(), memory)] = spec
    return list(rows.values())


@dataclass(frozen=True)
class Tables:
    """The two shipped, dated tables the plan reads: the device table and the device names table."""

    specs: list[DeviceSpec]
    names: list[NamesRow]


def _plain(name: str) -> str:
    """'rtx-4090' and 'RTX4090' alike: letters and digits, lower case."""
    return "".join(c for c in name.lower() if c.isalnum())


def spec_for(tables: Tables, gpu: str, device_names: Sequence[str]) -> tuple[DeviceSpec | None, str]:
    """The device table's row for a catalog row's GPU id and driver names, or for a measured device's name (gpu ''):
    through the names table (it tells an A100 of 40 GiB from one of 80), else by the GPU id; None and why when the
    table has none or cannot tell which."""
    specs, names = tables.specs, tables.names
    wanted = {n.lower() for n in device_names}
    found = [s for named in names if wanted & {n.lower() for n in named.device_names}
             for s in specs if s.accelerator.lower() == named.accelerator.lower()
             and (named.memory_gib is None or abs(s.memory_gib - named.memory_gib) <= MEMORY_TOLERANCE_GIB)]
    if not found and gpu:
        found = [s for s in specs if _plain(s.accelerator) == _plain(gpu)]
    if not found:
        names_said = "; ".join(device_names) or "device names unknown"
        table = specs[0].table if specs else "the device table"
        return None, (f"no row for {gpu or names_said} ({names_said}) in {table}: add one with --device-table FILE "
                      "(docs/catalogs.md)")
    if len({(s.memory_gib, s.peaks) for s in found}) > 1:
        sizes = " and ".join(sorted({f"{s.memory_gib:g} GiB" for s in found}))
        return None, (f"{gpu} names several devices in the device table ({sizes}) and the row's device names do not "
                      "tell which")
    same = [s for s in found if s.accelerator.lower() == gpu.lower()]
    return (same or found)[0], ""


def peak_for(spec: DeviceSpec, precision: str, quantization: str) -> tuple[float | None, str]:
    """The dense peak (FLOP/s) a configuration of this precision and quantization could reach on the device, with the
    words saying which; None and why when there is none."""
    if quantization != NO_QUANTIZATION:
        return None, (f"its quantization {quantization} has no GPU analogue here (dynamic int8 quantization runs on "
                      "the CPU only): no GPU peak applies")
    value = spec.peak(precision)
    if value is None:
        return None, f"{spec.accelerator} has no {precision} figure in {spec.table} (its vendor publishes none)"
    if precision == "fp32":
        return value * 1e12, (f"the fp32 dense peak {value:g} TFLOP/s (no TF32: torch's default float32 matmul "
                              "precision 'highest')")
    return value * 1e12, f"the {precision} dense peak {value:g} TFLOP/s"
