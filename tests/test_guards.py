"""Validity guards around the measured part: a corpus repeated inside one clock until it is long enough to time
(min_measured_s), the board's state (throttling, other processes on the GPU, utilisation: starved), and the idle
power a cooldown measures, with each pass's energy net of it. No GPU here: the vendor module is a fake. A real pass
under min_measured_s and cooldown_s through the CLI is tests/test_contention.py's busy-loop pass (one pass less)."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.board import (
    BoardState,
    gpu_contention,
    mean_utilisation,
    nvml_reasons,
    other_processes,
    starved,
    throttled,
)
from gpucost_mlflow.core.measurement.energy import CounterSpec, idle_power, net_of_idle
from gpucost_mlflow.core.measurement.repetitions import again, per_corpus, timed_seconds
from gpucost_mlflow.execution import boards, energy, repetitions, runner
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.workloads.classification import batches
from tests.test_energy import fake_nvml

VARIANTS = Path(__file__).resolve().parents[1] / "projects" / "variants.yaml"
SPEC = CounterSpec("test counter (mJ)", 1e-3, None, 0.1, "given")


@pytest.mark.unit
def test_only_slowdowns_count_as_throttling_never_idle_or_a_clock_setting():
    assert nvml_reasons(0x1 | 0x2 | 0x10) == ()
    assert nvml_reasons(0x4 | 0x40 | 0x1) == ("software power cap", "hardware thermal slowdown")
    start, end = BoardState(throttle_reasons=("software power cap",)), BoardState(
        throttle_reasons=("software power cap", "hardware thermal slowdown"))
    assert throttled(start, end) == "software power cap (at start, at end); hardware thermal slowdown (at end)"
    assert throttled(BoardState(), BoardState()) == "" and throttled(None, None) == ""


@pytest.mark.unit
def test_other_processes_on_the_gpu_leave_out_the_pass_own():
    found = other_processes([(10, 2**31), (11, None), (99, 5)], own_pids=[99])
    assert found == ("pid 10 (2.0 GiB)", "pid 11")
    count, text = gpu_contention(BoardState(other_processes=found[:1]), BoardState(other_processes=found))
    assert count == 2 and text == "other processes on the GPU during the measured pass: pid 10 (2.0 GiB), pid 11"
    assert gpu_contention(BoardState(), BoardState()) == (0, "")


@pytest.mark.unit
def test_starved_is_mean_utilisation_inside_the_measured_part_under_the_limit():
    samples = [(50, 100.0), (100, 40.0), (200, 20.0), (300, 100.0)]
    assert mean_utilisation(samples, 100, 200) == pytest.approx(0.30)
    assert mean_utilisation(samples, 400, 500) is None
    assert starved(0.30, 0.5, "GPU") == "starved: 30 % mean GPU utilisation during the measured part (limit 50 %)"
    assert starved(0.5, 0.5, "GPU") == "" and starved(None, 0.5, "CPU") == ""


@pytest.mark.unit
def test_energy_net_of_idle_power_is_the_known_answer():
    watts, why = idle_power(SPEC, 1_000_000, 1_060_000, 2.0)  # 60 J over 2 s
    assert (watts, why) == (pytest.approx(30.0), "")
    assert net_of_idle(480.0, 30.0, 10.0) == pytest.approx(180.0)
    assert net_of_idle(480.0, None, 10.0) is None
    assert idle_power(SPEC, 0, 10, 0.5)[0] is None  # five updates of the counter: not resolved


@pytest.mark.unit
def test_repetitions_go_on_until_the_clock_reached_min_measured_s_and_pass_s_stays_one_corpus():
    assert again(0.5, 2.0) and not again(2.0, 2.0) and not again(0.1, None)
    assert per_corpus(2.4, 4) == pytest.approx(0.6)
    # The harness overhead subtracts the whole clock and the cooldown, not one corpus's pass_s.
    assert timed_seconds({"load_s": 1, "warmup_s": 1, "pass_s": 0.6, "measured_total_s": 2.4, "eval_s": 1,
                          "export_s": 1, "cooldown_waited_s": 5}) == pytest.approx(11.4)
    assert timed_seconds({"load_s": 1, "pass_s": 0.6}) == pytest.approx(1.6)
    # A forked child's load_s counts its starter's imports, made once before the pass: not this run's seconds.
    assert timed_seconds({"load_s": 3.2, "import_s": 3.0, "pass_s": 0.6}) == pytest.approx(0.8)


@pytest.mark.unit
@pytest.mark.parametrize("field, value", [("min_measured_s", 0), ("min_measured_s", "2"), ("cooldown_s", -1),
                                          ("min_utilisation", 1.5)])
def test_a_bad_guard_field_is_refused_in_one_line(protocol_file, tmp_path, field, value):
    path = tmp_path / "protocol.yaml"
    path.write_text(protocol_file.read_text() + f"{field}: {value!r}\n", encoding="utf-8")
    with pytest.raises(GpucostError, match=field):
        load_protocol(path)


@pytest.mark.unit
def test_guard_fields_default_to_no_repetition_no_cooldown_and_half_busy(protocol_file):
    protocol = load_protocol(protocol_file)
    assert (protocol.min_measured_s, protocol.cooldown_s, protocol.min_utilisation) == (None, 0.0, 0.5)


def throttling_nvml(counter_values: list[int]) -> types.ModuleType:
    """The test fake NVML with a board state: hot and power-capped at the end, one other process on the GPU, and
    utilisation samples of 40 % and 20 % inside the measured part."""
    module = fake_nvml(counter_values)
    module.NVML_TEMPERATURE_GPU, module.NVML_GPU_UTILIZATION_SAMPLES = 0, 1
    temperatures, reasons = iter([61, 83]), iter([0x1, 0x4 | 0x20])
    module.nvmlDeviceGetTemperature = lambda handle, sensor: next(temperatures)
    module.nvmlDeviceGetCurrentClocksEventReasons = lambda handle: next(reasons)
    module.nvmlDeviceGetComputeRunningProcesses = lambda handle: [
        types.SimpleNamespace(pid=4242, usedGpuMemory=3 * 2**30)]

    def samples(handle, kind, last_seen_us):
        value = lambda v: types.SimpleNamespace(uiVal=v)
        return 1, [types.SimpleNamespace(timeStamp=last_seen_us + 1, sampleValue=value(40)),
                   types.SimpleNamespace(timeStamp=last_seen_us + 2, sampleValue=value(20))]

    module.nvmlDeviceGetSamples = samples
    return module


@pytest.mark.integration
def test_a_throttled_pass_on_a_shared_gpu_is_flagged_and_its_energy_is_net_of_idle(tmp_path, corpus_dir, minilm_dir,
                                                                                 monkeypatch, protocol_file):
    """A real pass of the real encoder (a measured part longer than the counter's update) under a fake NVML: throttled
    at the end, another process on the GPU, 30 % busy; the cooldown reads 50 J over 1 s of idling (50 W) and the pass
    480 J."""
    from gpucost_mlflow.flow import launcher

    module = throttling_nvml([0, 1_000_000, 1_050_000, 5_000_000, 5_480_000])
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(energy, "open_board", lambda device: boards.nvml_board(boards.DeviceIdentity(0, "1234")))
    spec = runner.PassSpec(corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(minilm_dir),
                           workdir=str(tmp_path), settings=get_variant(VARIANTS, "batch8").settings, cooldown_s=1.0,
                           implementation=registry.implementation(get_variant(VARIANTS, "batch8").settings))
    outcome = runner.run(spec, time.perf_counter_ns())

    assert outcome.status == "completed"
    metrics = outcome.measured.metrics
    assert metrics["cooldown_waited_s"] >= 1.0 and metrics["idle_power_w"] == pytest.approx(50 / metrics["cooldown_waited_s"])
    assert metrics["energy_j"] == pytest.approx(480.0)
    assert metrics["energy_net_j"] == pytest.approx(480.0 - metrics["idle_power_w"] * outcome.timings.pass_s)
    assert (metrics["device_temperature_c_at_start"], metrics["device_temperature_c_at_end"]) == (61, 83)
    assert metrics["other_gpu_processes"] == 1 and metrics["gpu_utilisation"] == pytest.approx(0.30)
    board = outcome.board.facts["board"]
    assert board["throttled"] == "software power cap (at end); software thermal slowdown (at end)"
    assert "energy" in outcome.board.facts  # the energy record joins the board's, never replaces it

    prepared = types.SimpleNamespace(protocol=load_protocol(protocol_file))
    request = types.SimpleNamespace(variant=get_variant(VARIANTS, "batch8"))
    flags = launcher._flags(request, prepared, outcome, metrics)
    assert flags[schema.THROTTLED].startswith("software power cap")
    assert flags[schema.CONTENDED].endswith("other processes on the GPU during the measured pass: pid 4242 (3.0 GiB)")
    assert flags[schema.STARVED].startswith("starved: 30 % mean GPU utilisation")


class SlowWork:
    """A workload whose every corpus takes a tenth of a second: what the clock repeats, and what each repetition
    wrote."""

    def __init__(self):
        self.calls = 0

    def __call__(self, ids, texts, tokenizer, model, settings, device, on_batch=None):
        self.calls += 1
        time.sleep(0.1)
        return batches.Predictions(list(ids), [0] * len(ids), [1.0] * len(ids))


@pytest.mark.unit
def test_a_tenth_second_corpus_under_min_measured_s_0_4_is_processed_about_4_times_inside_one_clock(corpus_dir):
    work, repeats = SlowWork(), repetitions.Repeats(0.4)
    processing = runner.Processing(work, None, None, None, None)
    predictions, seconds = runner.measure(str(corpus_dir / "comparison.jsonl"), processing, lambda: None,
                                          repeats=repeats)
    assert repeats.count == work.calls and 4 <= repeats.count <= 5 and seconds >= 0.4
    assert len(repeats.later) == repeats.count - 1 and len(predictions.ids) == 30
    assert runner.measure(str(corpus_dir / "comparison.jsonl"), runner.Processing(SlowWork(), None, None, None, None),
                          lambda: None)[1] < 0.25  # without min_measured_s: once


@pytest.mark.unit
def test_the_summary_counts_throttled_and_starved_passes_and_says_how_busy_the_device_was():
    from gpucost_mlflow.report.sections import flags_text

    summary = types.SimpleNamespace(contended=1, throttled=2, too_short=0, starved=1, next_batch="",
                                    busy={"gpu_utilisation": 0.23, "cpu_utilisation": 0.91})
    assert flags_text(summary, 5) == ("; contended 1; throttled 2 of 5; starved 1 of 5: 23 % mean GPU; "
                                      "busy GPU 23 %/CPU 91 %")
    summary.next_batch = "next batch size worth trying: 16"
    assert "; starved 1 of 5: 23 % mean GPU; next batch size worth trying: 16; busy GPU 23 %" in flags_text(summary, 5)
    quiet = types.SimpleNamespace(contended=0, throttled=0, too_short=0, starved=0, next_batch="", busy={})
    assert flags_text(quiet, 5) == ""


@pytest.mark.unit
def test_a_pass_description_names_its_throttling_and_starvation():
    from gpucost_mlflow.tracking.descriptions import pass_note

    note = pass_note({schema.VARIANT: "batch8", schema.STATUS: "accepted",
                      schema.THROTTLED: "software power cap (at end)",
                      schema.STARVED: "starved: 30 % mean GPU utilisation during the measured part (limit 50 %)"},
                     {"pass_s": 0.5, "repetitions": 4.0})
    assert "**Throttled:** software power cap (at end)" in note and "**Starved:** starved: 30 %" in note
    assert "**Repeated:** the clock processed the corpus 4 times" in note
