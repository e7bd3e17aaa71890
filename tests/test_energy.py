"""Energy of the measured pass from a board counter read around the clock; an empty cell with its reason
where no counter exists (CPU, NVML absent, a VM without RAPL). No GPU here: vendor modules are fakes."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from typing import ClassVar

import pytest

from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.energy import (
    DEVICE_UUID_TAG,
    ENERGY_COUNTER_TAG,
    ENERGY_FLAG_TAG,
    CounterSpec,
    advanced,
    joules_per_validated_corpus,
    pass_energy,
)
from gpucost_mlflow.execution import boards, energy, runner, timing

VARIANTS = Path(__file__).resolve().parents[1] / "projects" / "variants.yaml"

SPEC = CounterSpec("test counter (mJ)", 1e-3, None, 0.1, "given")


def fake_nvml(counter_values: list[int], supported: bool = True) -> types.ModuleType:
    """A pynvml stand-in whose total-energy counter returns the given values in turn."""
    values = iter(counter_values)
    module = types.ModuleType("pynvml")
    module.NVML_CLOCK_SM, module.NVML_CLOCK_MEM = 1, 2
    module.calls = []
    module.nvmlInit = lambda: module.calls.append("init")
    module.nvmlDeviceGetHandleByUUID = lambda uuid: ("handle", uuid)
    module.nvmlDeviceGetHandleByIndex = lambda index: ("handle", index)
    module.nvmlSystemGetDriverVersion = lambda: b"570.86.15"
    module.nvmlDeviceGetName = lambda handle: "NVIDIA H200"
    module.nvmlDeviceGetUUID = lambda handle: "GPU-1234"
    module.nvmlDeviceGetClockInfo = lambda handle, kind: {1: 1980, 2: 3201}[kind]
    module.nvmlDeviceGetEnforcedPowerLimit = lambda handle: 700_000

    def total_energy(handle):
        if not supported:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return next(values)

    module.nvmlDeviceGetTotalEnergyConsumption = total_energy
    return module


@pytest.mark.unit
def test_energy_is_the_counter_difference_in_joules():
    assert pass_energy(SPEC, 1_000_000, 1_250_500, 5.0).energy_j == pytest.approx(250.5)


@pytest.mark.unit
def test_a_wrapped_counter_is_counted_once_around():
    assert advanced(990, 10, wraps_at=1000) == 20
    spec = CounterSpec("rapl", 1e-6, 1000, 0.001, "given")
    assert pass_energy(spec, 990, 10, 1.0).energy_j == pytest.approx(20e-6)


@pytest.mark.unit
def test_a_counter_that_went_back_without_a_wrap_is_an_empty_cell_with_the_reason():
    result = pass_energy(SPEC, 500, 100, 5.0)
    assert result.energy_j is None and "counter reset" in result.reason


@pytest.mark.unit
def test_a_pass_shorter_than_the_update_period_has_no_energy_and_says_why():
    result = pass_energy(SPEC, 100, 100, 0.05)
    assert result.energy_j is None and "shorter than" in result.reason


@pytest.mark.unit
def test_a_pass_of_a_few_update_periods_is_flagged_not_dropped():
    short = pass_energy(SPEC, 0, 90_000, 0.5)
    assert short.energy_j == pytest.approx(90.0) and "off by up to 40 %" in short.flag
    assert pass_energy(SPEC, 0, 900_000, 5.0).flag == ""


@pytest.mark.unit
def test_a_counter_that_did_not_move_is_never_a_zero():
    result = pass_energy(SPEC, 100, 100, 3.0)
    assert result.energy_j is None and "did not advance" in result.reason


@pytest.mark.unit
def test_joules_per_validated_corpus_is_the_median_of_accepted_passes():
    assert joules_per_validated_corpus([300.0, 100.0, 200.0]) == (200.0, "")
    assert joules_per_validated_corpus([None, 120.0]) == (120.0, "")
    assert joules_per_validated_corpus([]) == (None, "no accepted pass")
    assert joules_per_validated_corpus([None])[0] is None


@pytest.mark.unit
def test_nvml_absent_gives_an_empty_energy_cell_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    board = boards.nvml_board(boards.DeviceIdentity(0, "1234"))
    probe = energy.EnergyProbe(board)
    probe.read_before()
    probe.read_after()
    fields = energy.outcome_fields(probe, board.facts(), pass_s=12.0)
    assert "energy_j" not in fields["metrics"]
    assert fields["missing_measurements"]["energy_j"].startswith("NVML absent: nvidia-ml-py is not installed")
    assert fields["tags"][ENERGY_COUNTER_TAG].startswith("none: NVML absent")


@pytest.mark.unit
def test_fake_nvml_counter_values_give_energy_j_as_their_difference(monkeypatch):
    module = fake_nvml([7_000_000, 7_000_000, 7_431_250])  # the first read checks the counter is supported
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    board = boards.nvml_board(boards.DeviceIdentity(0, "1234"))
    facts = board.facts()
    probe = energy.EnergyProbe(board)
    probe.read_before()
    probe.read_after()
    fields = energy.outcome_fields(probe, facts, pass_s=8.0)
    assert fields["metrics"]["energy_j"] == pytest.approx(431.25)
    assert fields["metrics"]["device_sm_clock_mhz_at_start"] == 1980
    assert fields["metrics"]["device_power_limit_w"] == 700
    assert fields["device_facts"]["driver"] == "570.86.15" and fields["device_facts"]["name"] == "NVIDIA H200"
    assert fields["tags"][DEVICE_UUID_TAG] == "GPU-1234"
    assert "nvml total energy" in fields["tags"][ENERGY_COUNTER_TAG] and "0.1 s" in fields["tags"][ENERGY_COUNTER_TAG]
    assert ENERGY_FLAG_TAG not in fields["tags"]


@pytest.mark.unit
def test_nvml_without_the_energy_counter_keeps_the_facts_and_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([], supported=False))
    board = boards.nvml_board(boards.DeviceIdentity(0, "1234"))
    assert board.spec is None and "not supported" in board.reason
    assert board.facts()["name"] == "NVIDIA H200"


@pytest.mark.unit
def test_a_failed_pass_has_no_energy_and_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([1, 2, 3]))
    probe = energy.EnergyProbe(boards.nvml_board(boards.DeviceIdentity(0, "1234")))
    probe.read_before()
    probe.read_after()
    assert probe.result(None).reason == "pass did not complete"


@pytest.mark.unit
def test_fake_amdsmi_counter_uses_its_resolution(monkeypatch):
    readings = iter([100, 100, 100 + 2_000_000])
    module = types.ModuleType("amdsmi")
    module.AmdSmiClkType = types.SimpleNamespace(GFX="gfx", MEM="mem")
    module.amdsmi_init = lambda: None
    module.amdsmi_get_processor_handles = lambda: ["h0", "h1"]
    module.amdsmi_get_gpu_device_bdf = lambda handle: {"h0": "0000:03:00.0", "h1": "0000:83:00.0"}[handle]
    module.amdsmi_get_gpu_device_uuid = lambda handle: f"uuid-{handle}"
    module.amdsmi_get_energy_count = lambda handle: {"energy_accumulator": next(readings), "counter_resolution": 15.3}
    module.amdsmi_get_clock_info = lambda handle, kind: {"clk": 2100}
    module.amdsmi_get_gpu_driver_info = lambda handle: {"driver_version": "6.10.5"}
    module.amdsmi_get_gpu_asic_info = lambda handle: {"market_name": "AMD Instinct MI300X"}
    module.amdsmi_get_power_cap_info = lambda handle: {"power_cap": 750_000_000}
    monkeypatch.setitem(sys.modules, "amdsmi", module)
    board = boards.amdsmi_board(boards.DeviceIdentity(1, "", "0000:83:00.0"))
    probe = energy.EnergyProbe(board)
    probe.read_before()
    probe.read_after()
    fields = energy.outcome_fields(probe, board.facts(), pass_s=10.0)
    assert fields["metrics"]["energy_j"] == pytest.approx(2_000_000 * 15.3e-6)
    assert fields["device_facts"]["uuid"] == "uuid-h1" and fields["metrics"]["device_power_limit_w"] == 750


@pytest.mark.unit
def test_rapl_absent_or_unreadable_is_an_empty_cell_with_the_reason(tmp_path, monkeypatch):
    absent = boards.rapl_board(tmp_path / "intel-rapl:0").reason
    assert "is absent" in absent
    # on the real path the whole reason fits a short tag (100 characters): never cut to '/sys/class/powercap … )'
    assert len(absent.replace(str(tmp_path / "intel-rapl:0"), str(boards.RAPL_DIR))) <= 100
    folder = tmp_path / "intel-rapl:1"
    folder.mkdir()
    (folder / "energy_uj").write_text("5\n")

    def root_only(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(boards.Path, "read_text", root_only)
    board = boards.rapl_board(folder)
    assert board.spec is None and "not readable here" in board.reason
    assert len(board.reason.replace(str(folder), str(boards.RAPL_DIR))) <= 100


@pytest.mark.unit
def test_rapl_counter_wraps_at_its_range(tmp_path):
    folder = tmp_path / "intel-rapl:0"
    folder.mkdir()
    (folder / "max_energy_range_uj").write_text("1000000\n")
    (folder / "energy_uj").write_text("999000\n")
    board = boards.rapl_board(folder)
    probe = energy.EnergyProbe(board)
    probe.read_before()
    (folder / "energy_uj").write_text("4000\n")
    probe.read_after()
    assert probe.result(2.0).energy_j == pytest.approx(5000e-6)


LOG: list[str] = []


class LoggedEvent:
    """torch.cuda.Event's timing surface, each record logged: where the events sit against the clock."""

    elapsed_ms: ClassVar[float] = 1234.5

    def __init__(self, enable_timing: bool = False):
        assert enable_timing

    def record(self):
        LOG.append("event")

    def synchronize(self):
        pass

    def elapsed_time(self, end: LoggedEvent) -> float:
        return self.elapsed_ms


@pytest.mark.integration
def test_energy_and_device_events_bracket_the_clock_in_a_real_pass(tmp_path, corpus_dir, minilm_dir, monkeypatch):
    """A fake NVML gives the counter values; energy_j is their difference; the reads sit just outside the
    host clock and the events just inside it. The real encoder: a measured part longer than the counter's update."""
    LOG.clear()
    module = fake_nvml([5_000_000, 5_000_000, 5_480_000])
    total = module.nvmlDeviceGetTotalEnergyConsumption

    def logged_total(handle):
        LOG.append("energy")
        return total(handle)

    module.nvmlDeviceGetTotalEnergyConsumption = logged_total
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    class LoggedStopwatch(timing.Stopwatch):
        def start(self):
            super().start()
            LOG.append("clock start")

        def stop(self):
            LOG.append("clock stop")
            return super().stop()

    monkeypatch.setattr(timing, "Stopwatch", LoggedStopwatch)
    monkeypatch.setattr(energy, "open_board", lambda device: boards.nvml_board(boards.DeviceIdentity(0, "1234")))
    monkeypatch.setattr(timing.DeviceEvents, "for_device", classmethod(lambda cls, device: cls(LoggedEvent)))

    spec = runner.PassSpec(corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(minilm_dir),
                           workdir=str(tmp_path), settings=get_variant(VARIANTS, "batch8").settings,
                           implementation=registry.implementation(get_variant(VARIANTS, "batch8").settings))
    outcome = runner.run(spec, time.perf_counter_ns())

    assert outcome.status == "completed"
    assert outcome.measured.metrics["energy_j"] == pytest.approx(480.0)
    assert outcome.measured.metrics["device_event_s"] == pytest.approx(1.2345)
    tags = outcome.measured.tags
    assert tags[DEVICE_UUID_TAG] == "GPU-1234" and "nvml" in tags[ENERGY_COUNTER_TAG]
    assert outcome.board.facts["driver"] == "570.86.15"
    warmup, board_check, export = ["clock start", "clock stop"], ["energy"], ["clock start", "clock stop"]
    measured = ["energy", "clock start", "event", "event", "clock stop", "energy"]
    assert LOG == board_check + warmup + measured + export  # the board opens before the (optional) cooldown
