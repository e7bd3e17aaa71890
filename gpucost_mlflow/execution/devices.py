"""What the devices a pass runs on are: backend, torch build, and their names as the driver reports them.

Kept apart from `environment` (the whole stack) so `peak` can key its cache by device without a cycle.
"""

from __future__ import annotations

import platform
from pathlib import Path

import torch


def backend() -> str:
    """cuda, rocm or cpu, from the torch build and whether a device is visible."""
    if torch.cuda.is_available():
        return "rocm" if torch.version.hip else "cuda"
    return "cpu"


def torch_build() -> str:
    """What the installed torch was built for, whatever devices are present."""
    if torch.version.hip:
        return f"rocm {torch.version.hip}"
    if torch.version.cuda:
        return f"cuda {torch.version.cuda}"
    return "cpu"


def cpu_name() -> str:
    """The CPU model as the kernel reports it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_names(device: torch.device) -> list[str]:
    """Names of the devices the pass uses, as the driver reports them."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return [torch.cuda.get_device_name(index)]
    return [cpu_name()]
