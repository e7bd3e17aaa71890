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


def rss_bytes() -> int:
    """Current resident set size of this process (Linux /proc/self/statm)."""
    import os

    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def outside_torch(engine: str, device: torch.device) -> dict:
    """Memory peaks of a pass whose engine allocates outside torch (ONNX Runtime, CTranslate2, vLLM): the process's
    resident set on the CPU, which sees every allocation; on a GPU none is claimed, since torch's counters see none
    of that engine's allocations."""
    if device.type == "cpu":
        return peaks(device)
    return {"metrics": {}, "counter": f"none: {engine} allocates GPU memory outside torch's counters"}
