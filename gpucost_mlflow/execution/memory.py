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
