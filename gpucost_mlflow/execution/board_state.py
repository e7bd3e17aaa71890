"""The board's state around a measured part, read through the vendor's library (NVML, amdsmi): one read as a
`BoardState`, never raising, and the outcome parts the two reads around the clock make (temperatures, the clock at
the end, throttling, other processes on the device, utilisation). The rules that judge them are
`core/measurement/board.py`; the vendor reads themselves are the boards of `execution/boards.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from gpucost_mlflow.core.errors import one_line
from gpucost_mlflow.core.measurement.board import BoardState, gpu_contention, other_processes, throttled
from gpucost_mlflow.core.names import (
    GPU_UTILISATION,
    OTHER_GPU_PROCESSES,
    SM_CLOCK_END_MHZ,
    TEMPERATURE_END_C,
    TEMPERATURE_START_C,
)

if TYPE_CHECKING:
    from gpucost_mlflow.execution.boards import Board


def safely(read: Callable[[], object]) -> object:
    """A driver's answer, or 'unavailable: <why>' when it raised: one fact missing never stops the pass."""
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - one fact missing never stops the pass; its reason is kept
        return f"unavailable: {one_line(exc, named=True)}"


def number(value) -> float | None:
    """A driver's number as a float, None for anything else (an 'unavailable' text, a bool)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_state(reads: dict[str, Callable[[], object]], reasons: Callable[[], tuple[str, ...]],
               processes: Callable[[], list[tuple[int, int | None]]]) -> BoardState:
    """One read of the board; what a driver cannot tell stays None with its reason in `unavailable`."""
    values, unavailable = {}, {}
    for key, read in {**reads, "throttle_reasons": reasons, "other_processes": processes}.items():
        value = safely(read)
        if isinstance(value, str) and value.startswith("unavailable"):
            unavailable[key] = value
            value = None
        values[key] = value
    return BoardState(
        sm_clock_mhz=number(values["sm_clock_mhz"]), memory_clock_mhz=number(values["memory_clock_mhz"]),
        temperature_c=number(values["temperature_c"]), power_limit_w=number(values["power_limit_w"]),
        throttle_reasons=tuple(values["throttle_reasons"] or ()),
        other_processes=other_processes(values["other_processes"] or (), (os.getpid(),)),
        unavailable=unavailable)


def amd_process(found) -> tuple[int, int | None]:
    """(pid, bytes held) of one amdsmi process entry, whose shape differs between amdsmi versions."""
    if isinstance(found, dict):
        memory = found.get("mem", (found.get("memory_usage") or {}).get("vram_mem"))
        return int(found.get("pid", -1)), memory if isinstance(memory, int) else None
    return int(getattr(found, "pid", found)), None


def board_state(board: Board) -> BoardState | None:
    """One read of the board's state, or None where no driver library speaks for the device (never raises)."""
    if board.state is None:
        return None
    try:
        return board.state()
    except Exception as exc:  # noqa: BLE001 - the pass goes on; the state says it could not be read
        return BoardState(unavailable={"state": f"unavailable: {one_line(exc, named=True)}"})


def state_fields(board: Board, start: BoardState | None, end: BoardState | None, from_epoch_s: float,
                 until_epoch_s: float, measured_s: float | None) -> dict:
    """The board's state around the measured part as outcome parts: temperatures, the clock at the end, throttling,
    other processes on the device and its mean utilisation (a CPU pass has none of these: no driver library)."""
    if start is None and end is None:
        return {}
    metrics, missing = {}, {}
    for key, state, attribute in ((TEMPERATURE_START_C, start, "temperature_c"),
                                  (TEMPERATURE_END_C, end, "temperature_c"),
                                  (SM_CLOCK_END_MHZ, end, "sm_clock_mhz")):
        value = getattr(state, attribute, None) if state else None
        if value is not None:
            metrics[key] = value
    count, contended = gpu_contention(start, end)
    metrics[OTHER_GPU_PROCESSES] = float(count)
    if measured_s is not None and board.utilisation is not None:
        busy, why = board.utilisation(from_epoch_s, until_epoch_s)
        if busy is None:
            missing[GPU_UTILISATION] = why
        else:
            metrics[GPU_UTILISATION] = busy
    board_record = {"start": start.record() if start else None, "end": end.record() if end else None,
                    "throttled": throttled(start, end), "other_processes": contended}
    return {"metrics": metrics, "missing_measurements": missing, "device_facts": {"board": board_record}}
