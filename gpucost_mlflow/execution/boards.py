"""Each vendor's energy counter and device facts behind one small interface (`Board`): NVML on NVIDIA, amdsmi on
AMD, Linux RAPL on the CPU; `execution/energy.py` opens the pass's own and reads it around the clock.

nvidia-ml-py (module `pynvml`, extra `gpu`) and amdsmi (extra `rocm`, or the copy ROCm installs) are imported here
only, and only when the pass runs on their vendor's device. Absent or failing, the board has no counter and says why.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import one_line
from gpucost_mlflow.core.measurement.board import BoardState, amdsmi_reasons, mean_utilisation, nvml_reasons
from gpucost_mlflow.core.measurement.energy import CounterSpec
from gpucost_mlflow.execution.board_state import amd_process, number, read_state, safely

# NVIDIA documents the counter (millijoules since the driver loaded, Volta and newer) but not how often
# it moves; 0.1 s is the upper end of the 20-100 ms that PETSc's PetscLogGpuEnergyMeter manual page
# reports for newer GPUs (https://petsc.org/main/manualpages/Log/PetscLogGpuEnergyMeter).
NVML_UPDATE_PERIOD_S = 0.1
NVML = CounterSpec("nvml total energy counter (mJ, nvmlDeviceGetTotalEnergyConsumption)", 1e-3, None,
                   NVML_UPDATE_PERIOD_S,
                   "assumed: upper end of 20-100 ms reported for newer GPUs; NVIDIA publishes none")
# amdsmi_get_energy_count gives a 64-bit accumulator and its resolution in microjoules per count; AMD
# publishes no update period either, so the NVML bound is assumed.
AMDSMI_UPDATE_PERIOD_S = 0.1
AMDSMI_NAME = "amdsmi energy accumulator (amdsmi_get_energy_count)"
# Linux powercap RAPL: package 0 only, the whole CPU package (other processes included), microjoules,
# wrapping at max_energy_range_uj; the RAPL energy-status registers move about every 1 ms (kernel
# Documentation/hwmon/amd_energy.rst).
RAPL_DIR = Path("/sys/class/powercap/intel-rapl:0")
RAPL_UPDATE_PERIOD_S = 0.001
RAPL_NAME = "Linux RAPL package-0 energy (uJ, powercap energy_uj; whole CPU package, other processes included)"
VISIBLE_DEVICES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass(frozen=True)
class DeviceIdentity:
    """How a driver library finds torch's device: its ordinal, UUID and PCI address where torch knows them."""

    index: int
    uuid: str = ""
    pci_bus_id: str = ""


@dataclass
class Board:
    """One device's energy counter and facts behind the same small interface for every vendor.

    `spec` is None when there is no usable counter; `reason` then says why (the empty energy_j cell's reason).
    """

    spec: CounterSpec | None
    read: Callable[[], int] | None = None
    facts: Callable[[], dict] = dict
    reason: str = ""
    # The board's state (clocks, temperature, throttle reasons, other processes), read before and after the clock;
    # None where no driver library speaks for the device (the CPU).
    state: Callable[[], BoardState] | None = None
    # The device's mean utilisation between two epoch instants (fraction, or None with the reason), read after them.
    utilisation: Callable[[float, float], tuple[float | None, str]] | None = None


def no_counter(reason: str, facts: Callable[[], dict] = dict, state=None, utilisation=None) -> Board:
    return Board(None, None, facts, reason, state, utilisation)


def _import(name: str):
    """The optional vendor module, or None when it is not installed (or fails to load its library)."""
    import importlib

    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a broken vendor install is the same as none: no counter, with the reason
        return None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _numbers_visible_by_index() -> bool:
    """Device ordinals match the driver's own only when no *_VISIBLE_DEVICES remaps them."""
    return not any(os.environ.get(name) for name in VISIBLE_DEVICES)


def identity(device) -> DeviceIdentity:
    """torch's view of a CUDA / ROCm device: ordinal, UUID and PCI address (empty where this torch lacks them)."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    uuid = str(getattr(props, "uuid", "") or "")
    bus = getattr(props, "pci_bus_id", None)
    pci = ""
    if bus is not None:
        pci = f"{getattr(props, 'pci_domain_id', 0):04x}:{bus:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"
    return DeviceIdentity(index, uuid, pci)


def nvml_board(ident: DeviceIdentity) -> Board:
    """NVML's total-energy counter of the device torch uses, found by UUID, else PCI address, else ordinal."""
    pynvml = _import("pynvml")
    if pynvml is None:
        return no_counter("NVML absent: nvidia-ml-py is not installed (pip install 'gpucost-mlflow[gpu]')")
    try:
        pynvml.nvmlInit()
        if ident.uuid:
            uuid = ident.uuid if ident.uuid.startswith(("GPU-", "MIG-")) else f"GPU-{ident.uuid}"
            handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
        elif ident.pci_bus_id:
            handle = pynvml.nvmlDeviceGetHandleByPciBusId(ident.pci_bus_id)
        elif _numbers_visible_by_index():
            handle = pynvml.nvmlDeviceGetHandleByIndex(ident.index)
        else:
            return no_counter("NVML: torch gives no UUID or PCI address for the device and CUDA_VISIBLE_DEVICES "
                               "renumbers devices, so its NVML handle cannot be told apart")
    except Exception as exc:  # noqa: BLE001 - NVML failing (no driver, no permission) leaves the cell empty
        return no_counter(f"NVML unavailable: {one_line(exc, named=True)}")

    def facts() -> dict:
        return {
            "driver": safely(lambda: _text(pynvml.nvmlSystemGetDriverVersion())),
            "name": safely(lambda: _text(pynvml.nvmlDeviceGetName(handle))),
            "uuid": safely(lambda: _text(pynvml.nvmlDeviceGetUUID(handle))),
            "sm_clock_mhz": safely(lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            "memory_clock_mhz": safely(lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
            "power_limit_w": safely(lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000),
            "source": "NVML (nvidia-ml-py)",
        }

    def read() -> int:
        return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle))

    def state() -> BoardState:
        reasons = (getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                   or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons)
        return read_state(
            {"sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
             "memory_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
             "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
             "power_limit_w": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000},
            lambda: nvml_reasons(int(reasons(handle))),
            lambda: [(int(p.pid), p.usedGpuMemory if isinstance(p.usedGpuMemory, int) else None)
                     for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)])

    def utilisation(from_epoch_s: float, until_epoch_s: float) -> tuple[float | None, str]:
        try:
            _, samples = pynvml.nvmlDeviceGetSamples(handle, pynvml.NVML_GPU_UTILIZATION_SAMPLES,
                                                     int(from_epoch_s * 1e6))
        except Exception as exc:  # noqa: BLE001 - no samples: the cell stays empty with the reason
            return None, f"NVML utilisation samples unavailable: {one_line(exc, named=True)}"
        found = mean_utilisation(((int(x.timeStamp), float(x.sampleValue.uiVal)) for x in samples),
                                 int(from_epoch_s * 1e6), int(until_epoch_s * 1e6))
        return found, "" if found is not None else "no NVML utilisation sample inside the measured part"

    try:
        read()
    except Exception as exc:  # noqa: BLE001 - before Volta, or in some VMs, NVML reports NOT_SUPPORTED
        return no_counter(f"NVML total energy counter not supported here: {type(exc).__name__}: {exc}", facts,
                           state, utilisation)
    return Board(NVML, read, facts, "", state, utilisation)


def amdsmi_board(ident: DeviceIdentity) -> Board:
    """amdsmi's energy accumulator of the device torch uses, found by PCI address, else UUID, else ordinal.

    Written from amdsmi's documented Python API and tested with a fake module only (no AMD GPU here)."""
    amdsmi = _import("amdsmi")
    if amdsmi is None:
        return no_counter("amdsmi absent: the amdsmi Python package is not installed (ROCm ships it; "
                           "pip install 'gpucost-mlflow[rocm]')")
    try:
        amdsmi.amdsmi_init()
        handles = list(amdsmi.amdsmi_get_processor_handles())
        handle = None
        for candidate in handles:
            if ((ident.pci_bus_id
                 and safely(lambda c=candidate: amdsmi.amdsmi_get_gpu_device_bdf(c)) == ident.pci_bus_id)
                    or (ident.uuid and safely(lambda c=candidate: amdsmi.amdsmi_get_gpu_device_uuid(c)) == ident.uuid)):
                handle = candidate
                break
        if handle is None and _numbers_visible_by_index() and ident.index < len(handles):
            handle = handles[ident.index]
        if handle is None:
            return no_counter("amdsmi: the device torch uses was not found among amdsmi's processors")
    except Exception as exc:  # noqa: BLE001 - amdsmi failing (no driver, a VM guest) leaves the cell empty
        return no_counter(f"amdsmi unavailable: {one_line(exc, named=True)}")

    def facts() -> dict:
        clock = safely(lambda: amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX))
        memory_clock = safely(lambda: amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.MEM))
        return {
            "driver": safely(lambda: amdsmi.amdsmi_get_gpu_driver_info(handle)["driver_version"]),
            "name": safely(lambda: amdsmi.amdsmi_get_gpu_asic_info(handle)["market_name"]),
            "uuid": safely(lambda: amdsmi.amdsmi_get_gpu_device_uuid(handle)),
            "sm_clock_mhz": clock.get("clk", clock.get("cur_clk")) if isinstance(clock, dict) else clock,
            "memory_clock_mhz": (memory_clock.get("clk", memory_clock.get("cur_clk"))
                                 if isinstance(memory_clock, dict) else memory_clock),
            "power_limit_w": safely(lambda: amdsmi.amdsmi_get_power_cap_info(handle)["power_cap"] / 1e6),
            "source": "amdsmi",
        }

    def state() -> BoardState:
        known = facts()
        return read_state(
            {"sm_clock_mhz": lambda: known["sm_clock_mhz"], "memory_clock_mhz": lambda: known["memory_clock_mhz"],
             "temperature_c": lambda: amdsmi.amdsmi_get_temp_metric(handle, amdsmi.AmdSmiTemperatureType.HOTSPOT,
                                                                    amdsmi.AmdSmiTemperatureMetric.CURRENT),
             "power_limit_w": lambda: known["power_limit_w"]},
            lambda: amdsmi_reasons(amdsmi.amdsmi_get_gpu_metrics_info(handle).get("throttle_status")),
            lambda: [amd_process(p) for p in amdsmi.amdsmi_get_gpu_process_list(handle)])

    def utilisation(from_epoch_s: float, until_epoch_s: float) -> tuple[float | None, str]:
        try:
            average = amdsmi.amdsmi_get_gpu_metrics_info(handle).get("average_gfx_activity")
        except Exception as exc:  # noqa: BLE001 - no activity figure: the cell stays empty with the reason
            return None, f"amdsmi activity unavailable: {one_line(exc, named=True)}"
        value = number(average)
        return (value / 100, "") if value is not None else (None, "amdsmi reports no average_gfx_activity")

    try:
        first = amdsmi.amdsmi_get_energy_count(handle)
        resolution_uj = float(first["counter_resolution"])
    except Exception as exc:  # noqa: BLE001 - not supported on a VM guest, says amdsmi's documentation
        return no_counter(f"amdsmi energy counter not supported here: {type(exc).__name__}: {exc}", facts,
                           state, utilisation)

    def read() -> int:
        value = amdsmi.amdsmi_get_energy_count(handle)
        return int(value.get("energy_accumulator", value.get("power")))

    spec = CounterSpec(AMDSMI_NAME, resolution_uj * 1e-6, None, AMDSMI_UPDATE_PERIOD_S,
                       "assumed: AMD publishes no update period; the NVML bound is used")
    return Board(spec, read, facts, "", state, utilisation)


def rapl_board(folder: Path = RAPL_DIR) -> Board:
    """The CPU package's RAPL counter through Linux powercap, when this user may read it; why not in a reason short
    enough for a tag (`tracking/descriptions.py` SHORT, 100 characters), so it is never cut (issue 66)."""
    counter = folder / "energy_uj"
    try:
        int(counter.read_text())
    except FileNotFoundError:
        return no_counter(f"no energy counter: {counter} is absent (no RAPL, as in most VMs)")
    except PermissionError:
        return no_counter(f"no energy counter: {counter} is not readable here (root-only)")
    except (OSError, ValueError) as exc:
        return no_counter(f"CPU pass without an energy counter: {counter}: {exc}")
    try:
        wraps_at = int((folder / "max_energy_range_uj").read_text())
    except (OSError, ValueError):
        wraps_at = None  # a wrap then reads as a reset: an empty cell with that reason, never a wrong number
    spec = CounterSpec(RAPL_NAME, 1e-6, wraps_at, RAPL_UPDATE_PERIOD_S, "RAPL energy-status registers, ~1 ms")
    return Board(spec, lambda: int(counter.read_text()), dict)
