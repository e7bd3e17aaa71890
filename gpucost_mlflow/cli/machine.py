"""What the local machine holds: `gpucost memory estimate`, `memory measure` and `doctor`."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import DEFAULT_MODEL_DIR
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.workloads.encoder_memory import estimate, safetensors_parameters


@click.group()
def memory() -> None:
    """Memory: estimate (formulas) and observation (the local device), side by side."""


def _memory_options(function):
    for option in reversed([
        click.option("--model", "model_dir", type=click.Path(path_type=Path), default=DEFAULT_MODEL_DIR,
                     show_default=True),
        click.option("--precision", type=click.Choice(["fp32", "bf16", "fp16", "int8"]), default="fp32",
                     show_default=True),
        click.option("--batch", type=click.IntRange(min=1), default=8, show_default=True),
        click.option("--max-length", type=click.IntRange(min=1), default=256, show_default=True),
        click.option("--device-memory-gib", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Memory of the target device, for the fits / does not fit verdict."),
    ]):
        function = option(function)
    return function


def _estimate(model_dir, precision, batch, max_length, device_memory_gib):
    import json


    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise GpucostError(f"{model_dir}: no readable config.json") from None
    total, linear = safetensors_parameters(model_dir)
    result = estimate(config, total, linear, precision=precision, batch=batch, max_length=max_length,
                      device_memory_gib=device_memory_gib)
    click.echo(f"ESTIMATE for {model_dir} ({precision}, batch {batch}, max length {max_length}); not a measurement:")
    for part in result.parts:
        click.echo(f"  {part.name:48} {part.bytes / 2**20:9.1f} MiB  = {part.formula}")
    click.echo(f"  {'total (estimate)':48} {result.total_bytes / 2**20:9.1f} MiB")
    click.echo(f"  verdict: {result.verdict}")
    click.echo("  (no claim on throughput, interconnect or splitting a model over several GPUs)")
    return result


@memory.command("estimate")
@_memory_options
def memory_estimate(model_dir, precision, batch, max_length, device_memory_gib) -> None:
    """Parameters x bytes, activations per layer (attention scores included), allocator margin; a verdict."""
    _estimate(model_dir, precision, batch, max_length, device_memory_gib)


@memory.command("measure")
@_memory_options
def memory_measure(model_dir, precision, batch, max_length, device_memory_gib) -> None:
    """Load on the local device, run one batch, print observed peaks beside the estimate, and the stack check."""
    probe = registry.default_module("observed_memory")  # deferred: imports torch

    result = _estimate(model_dir, precision, batch, max_length, device_memory_gib)
    observed = probe.measure(model_dir, precision, batch, max_length)
    click.echo(f"OBSERVED on {observed['device']} (counter: {observed['counter']}):")
    for counter, value in observed["observed"].items():
        if isinstance(value, dict):
            skipped = ("peak_bytes", "after", "at_s")
            extra = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in value.items() if k not in skipped)
            click.echo(f"  {counter:10} peak {value['peak_bytes'] / 2**20:9.1f} MiB after {value['after']} "
                       f"at {value['at_s']:.3f} s{'; ' + extra if extra else ''}")
    grown = observed["observed"]["model_and_activations_bytes"]
    click.echo(f"  model + activations (peak minus before load): {grown / 2**20:.1f} MiB; "
               f"estimate / observed = {result.total_bytes / grown:.2f}" if grown > 0 else "  no growth observed")
    _doctor_lines()


def _doctor_lines() -> None:
    """Print the stack actually present: Python, torch build, runtimes, GPUs, ROCm matrix, energy counter, packages."""
    import platform

    from gpucost_mlflow.execution import energy, models  # deferred: imports torch
    from gpucost_mlflow.execution.environment import doctor_report, rocm_matrix  # deferred: imports torch

    info = doctor_report()
    lines = [f"python {platform.python_version()}, torch {info['torch']} (build: {info['torch_build']})",
             (f"CUDA runtime: {info['cuda_runtime'] or '-'}; HIP runtime: {info['hip_runtime'] or '-'}; "
              f"driver: {info['driver'] or '-'}")]
    if info["gpus"]:
        lines += [f"GPU {g['index']}: {g['name']}, {g['memory_gib']:.1f} GiB, {g['arch']}" for g in info["gpus"]]
    else:
        lines.append(f"no GPU: torch sees no CUDA or ROCm device; passes run on the CPU ({info['cpu']}, "
                     f"{info['cpu_count']} cores)")
    if info["hip_runtime"]:
        verdict = rocm_matrix(info["hip_runtime"], info["torch"])
        lines.append(f"ROCm matrix (checked against {verdict['snapshot'] or 'no snapshot'}): "
                     f"{verdict['status']}: {verdict['message']}")
    board = energy.open_board(models.resolve_device("auto"))
    lines.append(f"energy counter: {board.spec.describe() if board.spec else 'none: ' + board.reason}")
    lines.append("packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v))
    for line in lines:
        click.echo(line)


@click.command("doctor")
@click.option("--peak", "measure_peak", is_flag=True,
              help="Measure dense matmul FLOP/s per precision on the device and cache it for MFU.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Device whose peak is measured or shown.")
@click.option("--min-time", type=click.FloatRange(min=0.01), default=1.0, show_default=True,
              help="Seconds of timing per precision and size.")
@click.option("--if-missing", is_flag=True,
              help="With --peak: measure only the precisions not cached yet for this device.")
def doctor(measure_peak, device, min_time, if_missing) -> None:
    """The stack actually present: torch build, CUDA / HIP runtime, driver, GPUs, Python and key packages."""
    _doctor_lines()
    _peak_lines(device, measure_peak, min_time, if_missing)


def _peak_lines(choice: str, measure_peak: bool, min_time: float, if_missing: bool = False) -> None:
    """Print the cached dense-matmul peaks of the device; with --peak, measure and cache them first."""
    from gpucost_mlflow.execution import models, peak  # deferred: imports torch

    device = models.resolve_device(choice)
    peak.load_cache()
    wanted = [p for p in peak.supported(device) if not (if_missing and p in peak.cached_for(device)["peaks"])]
    if measure_peak and wanted:
        click.echo(f"measuring dense matmul throughput on {device} ({', '.join(wanted)}); takes a minute or two")
        measured, failed = peak.measure(device, wanted, min_run_time=min_time)
        path = peak.save(measured)
        for precision, why in failed.items():
            click.echo(f"  {precision}: not measured: {why}")
        click.echo(f"cached in {path}")
    record = peak.cached_for(device)
    if not record["peaks"]:
        click.echo(f"dense matmul peak: none cached for {device} in {record['cache']} (run `gpucost doctor --peak`); "
                   "MFU stays empty")
        return
    for precision, entry in record["peaks"].items():
        threads = f", {entry['threads']} threads" if entry["threads"] else ""
        click.echo(f"dense matmul peak {precision}: {entry['flop_per_s'] / 1e9:,.1f} GFLOP/s "
                   f"({entry['device']}{threads}, "
                   f"n={entry['size']}{', ' + entry['operation'] if entry['operation'] else ''}, measured "
                   f"{entry['measured_at']})")


COMMANDS = (memory, doctor)
