"""Peak memory per device, each counter named; allocated and reserved are never added."""

from __future__ import annotations

import resource
import sys

import torch

CPU_COUNTER = "process peak RSS (getrusage ru_maxrss of the pass's child process, whole lifetime including load)"
CUDA_COUNTER = "torch.cuda.max_memory_allocated / max_memory_reserved, reset before the measured pass"


def reset_peaks(device: torch.device) -> None:
    """Start the measured pass with fresh peak counters where the device has them."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def release(device: torch.device) -> None:
    """Give memory back after an out-of-memory failure: collect what the failed batch left unreferenced and
    return the allocator's cached blocks to the driver, so the child ends cleanly (peaks are kept)."""
    import gc

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def peaks(device: torch.device) -> dict:
    """Observed peaks as metrics plus the name of the counter they come from."""
    if device.type == "cuda":
        return {
            "metrics": {
                "mem_peak_allocated_bytes": float(torch.cuda.max_memory_allocated(device)),
                "mem_peak_reserved_bytes": float(torch.cuda.max_memory_reserved(device)),
            },
            "counter": CUDA_COUNTER,
        }
    scale = 1 if sys.platform == "darwin" else 1024
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    return {"metrics": {"mem_peak_rss_bytes": float(rss)}, "counter": CPU_COUNTER}


def _rss_bytes() -> int:
    """Current resident set size of this process (Linux /proc/self/statm)."""
    import os

    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def measure(model_dir, precision: str, batch: int, max_length: int, device_choice: str = "auto") -> dict:
    """Load the classifier on the local device, run one batch of batch x max_length tokens, and return
    the observed peaks with the module after which each was reached (allocated and reserved apart)."""
    import time

    from transformers import AutoModelForSequenceClassification  # noqa: F401  (imported before the baseline)

    from gpucost_mlflow.execution import models

    device = models.resolve_device(device_choice)
    before_load = torch.cuda.memory_allocated(device) if device.type == "cuda" else _rss_bytes()
    quantization = "dynamic-int8" if precision == "int8" else "none"
    model = models.load_classifier(model_dir, device, "fp32" if precision == "int8" else precision, quantization, "sdpa", False)
    started = time.perf_counter()
    samples: list[tuple[str, float, dict]] = []

    def sample(label: str) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            values = {"allocated": torch.cuda.memory_allocated(device), "reserved": torch.cuda.memory_reserved(device)}
        else:
            values = {"rss": _rss_bytes()}
        samples.append((label, time.perf_counter() - started, values))

    hooks = [module.register_forward_hook(lambda m, i, o, name=name: sample(name))
             for name, module in model.named_modules() if name.count(".") <= 3 and name]
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    input_ids = torch.randint(1000, vocab, (batch, max_length), generator=generator).to(device)
    mask = torch.ones_like(input_ids)
    reset_peaks(device)
    sample("before forward")
    with torch.inference_mode():
        model(input_ids=input_ids, attention_mask=mask)
    sample("after forward")
    for hook in hooks:
        hook.remove()
    observed = {}
    for counter in samples[0][2]:
        label, at, values = max(samples, key=lambda s: s[2][counter])
        observed[counter] = {"peak_bytes": values[counter], "after": label, "at_s": at}
    if device.type == "cuda":
        observed["allocated"]["max_memory_allocated"] = torch.cuda.max_memory_allocated(device)
        observed["reserved"]["max_memory_reserved"] = torch.cuda.max_memory_reserved(device)
        counter_name = "torch.cuda.memory_allocated / memory_reserved sampled after each module; max_memory_* as the true peaks"
    else:
        observed["rss"]["ru_maxrss"] = peaks(device)["metrics"]["mem_peak_rss_bytes"]
        counter_name = "process RSS (/proc/self/statm) sampled after each module; ru_maxrss = whole-process peak, load included"
    key = "allocated" if device.type == "cuda" else "rss"
    observed["model_and_activations_bytes"] = observed[key]["peak_bytes"] - before_load
    return {"device": str(device), "counter": counter_name, "observed": observed,
            "before_load": before_load, "after_load": samples[0][2]}


def outside_torch(engine: str, device: torch.device) -> dict:
    """Memory peaks of a pass whose engine allocates outside torch (ONNX Runtime, CTranslate2, vLLM): the process's
    resident set on the CPU, which sees every allocation; on a GPU none is claimed, since torch's counters see none
    of that engine's allocations."""
    if device.type == "cpu":
        return peaks(device)
    return {"metrics": {}, "counter": f"none: {engine} allocates GPU memory outside torch's counters"}
