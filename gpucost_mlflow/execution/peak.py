"""The device's measured dense matrix-multiply throughput per precision, cached for the passes to read.

`gpucost doctor --peak` measures it once per device, torch version and precision (and thread count
on the CPU) and caches it in a JSON file; a pass only reads the cache, it never measures during a
campaign. The cache: `$GPUCOST_PEAK_CACHE`, else `$XDG_CACHE_HOME/gpucost/peak.json`, else
`~/.cache/gpucost/peak.json`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.execution import models
from gpucost_mlflow.execution.devices import device_names

ENV = "GPUCOST_PEAK_CACHE"
PRECISIONS = ("fp32", "bf16", "fp16", "int8-dynamic")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CPU_SIZES = (512, 1024, 2048)
GPU_SIZES = (2048, 4096, 8192)
METHOD = ("median of torch.utils.benchmark blocked_autorange over square n x n @ n x n products "
          "(2 n^3 operations each) through torch.mm and F.linear, best size and entry point kept (sizes tried smallest "
          "first, stopping once one product takes longer than the timing budget); int8-dynamic: a dynamically "
          "quantized nn.Linear(n, n) on n rows")


@dataclass(frozen=True)
class Peak:
    """One measured dense matmul throughput, with what it was measured on and how."""

    device: str
    torch: str
    threads: int | None
    precision: str
    flop_per_s: float
    size: int
    measured_at: str
    method: str = METHOD
    matmul_precision: str = ""
    operation: str = ""

    @property
    def key(self) -> str:
        return cache_key(self.device, self.torch, self.threads, self.precision)


def cache_key(device: str, torch_version: str, threads: int | None, precision: str) -> str:
    """Device name, torch version, thread count (CPU only) and precision: a peak holds for exactly these."""
    where = device if threads is None else f"{device} ({threads} threads)"
    return f"{where} | torch {torch_version} | {precision}"


def cache_path() -> Path:
    """Where the peaks are cached (see the module docstring)."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpucost" / "peak.json"


def load_cache(path: Path | None = None) -> dict[str, Peak]:
    """Every cached peak by key; an absent file is an empty cache, a corrupt one a one-line error."""
    path = path or cache_path()
    if not path.exists():
        return {}
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["peaks"]
        peaks = [Peak(**entry) for entry in entries]
    except (OSError, ValueError, KeyError, TypeError):
        raise GpucostError(f"{path}: not a gpucost peak cache (delete it and run `gpucost doctor --peak`)") from None
    return {peak.key: peak for peak in peaks}


def save(peaks: list[Peak], path: Path | None = None) -> Path:
    """Add or replace these peaks in the cache, atomically."""
    path = path or cache_path()
    cached = load_cache(path)
    cached.update({peak.key: peak for peak in peaks})
    document = {"peaks": [asdict(peak) for peak in sorted(cached.values(), key=lambda p: p.key)]}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(document, indent=2) + "\n").encode("utf-8"))
    return path


def precision_of(settings: Settings) -> str:
    """The peak a pass is compared with: its precision, or int8-dynamic when its linears are quantized."""
    return "int8-dynamic" if settings.quantization == "dynamic-int8" else settings.precision


def _where(device: torch.device) -> tuple[str, int | None]:
    name = device_names(device)[0]
    return name, (torch.get_num_threads() if device.type == "cpu" else None)


def lookup(device: torch.device, precision: str, path: Path | None = None) -> tuple[Peak | None, str]:
    """The cached peak for this device and precision, or None and the reason it is missing."""
    name, threads = _where(device)
    key = cache_key(name, torch.__version__, threads, precision)
    try:
        found = load_cache(path).get(key)
    except GpucostError as exc:
        return None, str(exc)
    if found is None:
        return None, f"no dense-matmul peak cached for '{key}' in {path or cache_path()} (run `gpucost doctor --peak`)"
    return found, ""


def cached_for(device: torch.device, path: Path | None = None) -> dict:
    """What the manifest records: the cached peaks of this device (by precision) and the cache's path."""
    name, threads = _where(device)
    try:
        cached = load_cache(path)
    except GpucostError as exc:
        return {"cache": str(path or cache_path()), "peaks": {}, "note": str(exc)}
    peaks = {p: asdict(cached[cache_key(name, torch.__version__, threads, p)]) for p in PRECISIONS
             if cache_key(name, torch.__version__, threads, p) in cached}
    record = {"cache": str(path or cache_path()), "peaks": peaks}
    if not peaks:
        record["note"] = "no peak measured on this device: run `gpucost doctor --peak`"
    return record


def _cached_peaks(device_choice: str) -> dict:
    load_cache()
    return cached_for(models.resolve_device(device_choice))["peaks"]


def peaks_known(device_choice: str = "auto") -> bool:
    """Whether fp32's dense-matmul peak is cached for this device (the other precisions are judged against it)."""
    return "fp32" in _cached_peaks(device_choice)


def slow_precisions(device_choice: str = "auto") -> dict[str, str]:
    """Precisions whose cached dense-matmul peak on this device is below fp32's: not run natively faster."""
    peaks = _cached_peaks(device_choice)
    if "fp32" not in peaks:
        return {}
    fp32 = peaks["fp32"]["flop_per_s"]
    return {name: f"its dense-matmul peak here ({entry['flop_per_s'] / 1e9:,.1f} GFLOP/s) is below fp32's "
                  f"({fp32 / 1e9:,.1f} GFLOP/s)"
            for name, entry in peaks.items() if name in ("bf16", "fp16") and entry["flop_per_s"] < fp32}


def _operations(device: torch.device, precision: str, size: int) -> tuple[list[str], dict]:
    """The statements to time and their globals: dense n x n products at this precision on this device.

    Both entry points a transformer's matmuls go through, `torch.mm` and `F.linear`: on some CPUs they
    reach different kernels (bf16 without native support: about 1 vs 16 GFLOP/s on 2 AVX2 cores).
    """
    generator = torch.Generator().manual_seed(0)
    if precision == "int8-dynamic":
        if device.type != "cpu":
            raise RuntimeError("dynamic int8 quantization runs on the CPU only")
        layer = torch.nn.Linear(size, size, bias=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(layer), {torch.nn.Linear},
                                                           dtype=torch.qint8)
        return ["layer(a)"], {"layer": layer, "a": torch.randn(size, size, generator=generator)}
    a = torch.randn(size, size, generator=generator).to(device=device, dtype=DTYPES[precision])
    b = torch.randn(size, size, generator=generator).to(device=device, dtype=DTYPES[precision])
    return ["torch.mm(a, b)", "F.linear(a, b)"], {"torch": torch, "F": torch.nn.functional, "a": a, "b": b}


def measure_one(device: torch.device, precision: str, size: int, stmt: str, min_run_time: float = 1.0) -> float:
    """Median operations per second of one n x n product through `stmt` (synchronised on a GPU).

    A product slower than `min_run_time` on its own (an emulated precision) is timed once more, not repeated.
    """
    from torch.utils import benchmark

    statements, scope = _operations(device, precision, size)
    if stmt not in statements:
        raise ValueError(f"{stmt!r} is not one of {statements}")
    timer = benchmark.Timer(stmt=stmt, globals=scope, num_threads=torch.get_num_threads())
    with torch.inference_mode():
        single = timer.timeit(1).median
        median = (timer.timeit(1).median if single > min_run_time
                  else timer.blocked_autorange(min_run_time=min_run_time).median)
    return 2 * size**3 / median


def _best(device: torch.device, precision: str, sizes: list[int], min_run_time: float) -> tuple[float, int, str]:
    """The best (operations per second, size, statement); per statement the sizes climb from the smallest
    and stop once one product takes longer than `min_run_time` (an emulated precision)."""
    best = (0.0, 0, "")
    for stmt in _operations(device, precision, 8)[0]:
        for size in sizes:
            rate = measure_one(device, precision, size, stmt, min_run_time)
            best = max(best, (rate, size, stmt))
            if 2 * size**3 / rate > min_run_time:
                break
    return best


def supported(device: torch.device) -> list[str]:
    """Precisions worth measuring on this device: int8-dynamic on the CPU only, bf16 / fp16 where torch runs them."""
    found = []
    for precision in PRECISIONS:
        if precision == "int8-dynamic" and device.type != "cpu":
            continue
        if device.type == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
            continue
        found.append(precision)
    return found


def measure(device: torch.device, precisions: list[str] | None = None, sizes: tuple[int, ...] | None = None,
            min_run_time: float = 1.0) -> tuple[list[Peak], dict[str, str]]:
    """Measure each precision at each size, keep the best size; returns the peaks and the precisions that failed."""
    name, threads = _where(device)
    sizes = sizes or (CPU_SIZES if device.type == "cpu" else GPU_SIZES)
    matmul = torch.get_float32_matmul_precision()
    peaks, failed = [], {}
    for precision in precisions or supported(device):
        try:
            best = _best(device, precision, sorted(sizes), min_run_time)
        except (RuntimeError, NotImplementedError) as exc:
            failed[precision] = one_line(exc)
            continue
        peaks.append(Peak(
            device=name, torch=torch.__version__, threads=threads, precision=precision, flop_per_s=best[0],
            size=best[1], operation=best[2],
            measured_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            matmul_precision=f"torch.get_float32_matmul_precision() = {matmul}",
        ))
    return peaks, failed
