"""The measured device's energy at the start and end of a pass: its board (execution/boards.py: NVML, amdsmi or
Linux RAPL) read once just before the clock starts and once just after it stops (no sampling thread inside the
measured interval), the protocol's cooldown that gives the idle power, and what they make of the pass's outcome.

Absent or failing, the pass runs as before and `energy_j` is an empty cell with the reason; the arithmetic is
`core/measurement/energy.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpucost_mlflow.core.errors import one_line
from gpucost_mlflow.core.measurement.energy import (
    DEVICE_UUID_TAG,
    ENERGY_COUNTER_TAG,
    ENERGY_FLAG_TAG,
    ENERGY_METRIC,
    PassEnergy,
    idle_power,
    net_of_idle,
    pass_energy,
)
from gpucost_mlflow.core.names import COOLDOWN_S, ENERGY_NET_J, IDLE_POWER_W
from gpucost_mlflow.execution.boards import Board, amdsmi_board, identity, no_counter, nvml_board, rapl_board


def open_board(device) -> Board:
    """The counter for the pass's device: NVML on CUDA, amdsmi on ROCm, RAPL on the CPU."""
    if device.type == "cuda":
        import torch

        ident = identity(device)
        return amdsmi_board(ident) if torch.version.hip else nvml_board(ident)
    if device.type == "cpu":
        return rapl_board()
    return no_counter(f"no energy counter for a {device.type} device")


@dataclass
class EnergyProbe:
    """Two reads of a board's counter around the measured clock, and what they make of the pass."""

    board: Board
    before: int | None = None
    after: int | None = None
    errors: list[str] = field(default_factory=list)

    def _read(self) -> int | None:
        if self.board.read is None:
            return None
        try:
            return self.board.read()
        except Exception as exc:  # noqa: BLE001 - a failed read leaves energy_j empty with the reason
            self.errors.append(one_line(exc, named=True))
            return None

    def read_before(self) -> None:
        """Just before the clock starts (the device already synchronised)."""
        self.before = self._read()

    def read_after(self) -> None:
        """Just after the clock stopped (the device synchronised by the clock)."""
        self.after = self._read()

    def result(self, pass_s: float | None) -> PassEnergy:
        """energy_j of a completed pass, or the reason it is empty."""
        if self.board.spec is None:
            return PassEnergy(None, self.board.reason)
        if pass_s is None:
            return PassEnergy(None, "pass did not complete")
        if self.before is None or self.after is None:
            return PassEnergy(None, f"the {self.board.spec.name} could not be read: {'; '.join(self.errors)}")
        return pass_energy(self.board.spec, self.before, self.after, pass_s)


FACT_METRICS = {"sm_clock_mhz": "device_sm_clock_mhz_at_start", "memory_clock_mhz": "device_memory_clock_mhz_at_start",
                "power_limit_w": "device_power_limit_w"}


def outcome_fields(probe: EnergyProbe, facts: dict, pass_s: float | None, repetitions: int = 1,
                   idle_w: float | None = None) -> dict:
    """The pass outcome's metrics, missing measurements, run tags and device facts for energy and the board: energy_j
    per corpus (the counter's advance over the repetitions the clock held) and net of the idle power, when known."""
    measured = probe.result(None if pass_s is None else pass_s * repetitions)
    spec = probe.board.spec
    metrics = {metric: float(facts[key]) for key, metric in FACT_METRICS.items()
               if isinstance(facts.get(key), (int, float)) and not isinstance(facts.get(key), bool)}
    missing = {}
    energy_j = None if measured.energy_j is None else measured.energy_j / max(1, repetitions)
    if energy_j is None:
        missing[ENERGY_METRIC] = measured.reason
    else:
        metrics[ENERGY_METRIC] = energy_j
        net = net_of_idle(energy_j, idle_w, pass_s)
        if net is not None:
            metrics[ENERGY_NET_J] = net
        else:
            missing[ENERGY_NET_J] = "idle power not measured (no cooldown_s in the protocol, or its reason)"
    tags = {ENERGY_COUNTER_TAG: spec.describe() if spec else f"none: {probe.board.reason}"}
    if measured.flag:
        tags[ENERGY_FLAG_TAG] = measured.flag
    if isinstance(facts.get("uuid"), str) and facts["uuid"] and not facts["uuid"].startswith("unavailable"):
        tags[DEVICE_UUID_TAG] = facts["uuid"]
    energy = {"counter": spec.describe() if spec else "", "before": probe.before, "after": probe.after,
              "energy_j": energy_j, "clock_repeated": repetitions, "reason": measured.reason, "flag": measured.flag,
              "idle_w": idle_w}
    return {"metrics": metrics, "missing_measurements": missing, "tags": tags,
            "device_facts": {**facts, "energy": energy}}


def cool_down(board: Board, cooldown_s: float, sync: Callable[[], None]) -> dict:
    """The protocol's cooldown: the device idles `cooldown_s` after loading, before warm-up, and where a counter
    exists its two reads around the wait give the idle power. Outside every clock; an outcome part."""
    if cooldown_s <= 0:
        return {}
    import time

    sync()
    before = EnergyProbe(board)
    before.read_before()
    started = time.perf_counter()
    time.sleep(cooldown_s)
    before.read_after()
    waited = time.perf_counter() - started
    metrics, missing = {COOLDOWN_S: waited}, {}
    if board.spec is None:
        missing[IDLE_POWER_W] = board.reason
    elif before.before is None or before.after is None:
        missing[IDLE_POWER_W] = f"the {board.spec.name} could not be read: {'; '.join(before.errors)}"
    else:
        watts, why = idle_power(board.spec, before.before, before.after, waited)
        if watts is None:
            missing[IDLE_POWER_W] = why
        else:
            metrics[IDLE_POWER_W] = watts
    return {"metrics": metrics, "missing_measurements": missing}
