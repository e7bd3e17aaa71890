"""The GPU paths of a pass, proven on the CPU with fakes: a real out-of-memory error type inside the batch
loop, the board's energy counter around the clock, and the device-event cross-check (PROTOCOL §4, §5)."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import ClassVar

import mlflow
import pytest
import torch
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.core.judging.verdicts import PREDICTIONS
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.energy import ENERGY_COUNTER_TAG
from gpucost_mlflow.execution import boards, faults, memory, runner, timing
from gpucost_mlflow.workloads.classification import model as classifier_model

VARIANTS = Path(__file__).resolve().parents[1] / "projects" / "variants.yaml"


def spec_for(tmp_path, corpus_dir, model_dir) -> runner.PassSpec:
    return runner.PassSpec(
        corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(model_dir), workdir=str(tmp_path),
        settings=get_variant(VARIANTS, "batch8").settings,
        implementation=registry.implementation(get_variant(VARIANTS, "batch8").settings),
    )


class FakeEvent:
    """torch.cuda.Event's timing surface: record, synchronize, elapsed_time in milliseconds."""

    log: ClassVar[list[str]] = []

    def __init__(self, enable_timing: bool = False):
        assert enable_timing
        self.at = None

    def record(self):
        FakeEvent.log.append("event")
        self.at = len(FakeEvent.log)

    def synchronize(self):
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        return 1234.5


def test_oom_pass_is_kept_as_failed_row_with_its_completed_count(tmp_path, corpus_dir, model_dir, monkeypatch):
    """torch's own out-of-memory type raised by the model at the third measured batch, not GPUCOST_FAULT."""
    armed, released = [], []
    load = classifier_model.load_classifier

    def load_failing(*args, **kwargs):
        model = load(*args, **kwargs)
        forward = model.forward

        def forward_until_oom(*f_args, **f_kwargs):
            if armed:
                armed.append(1)
                if len(armed) == 4:  # the third measured batch
                    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
            return forward(*f_args, **f_kwargs)

        model.forward = forward_until_oom
        return model

    reset = memory.reset_peaks
    monkeypatch.setattr(classifier_model, "load_classifier", load_failing)
    monkeypatch.setattr(memory, "reset_peaks", lambda device: (armed.append(0), reset(device)))
    monkeypatch.setattr(memory, "release", lambda device: released.append(device.type))

    outcome = runner.run(spec_for(tmp_path, corpus_dir, model_dir), time.perf_counter_ns())

    assert outcome.status == "failed" and outcome.timings.pass_s is None
    assert outcome.reason.startswith("out of memory: CUDA out of memory")
    assert outcome.measured.completed_entries == 16  # the two batches finished before the third
    assert outcome.timings.elapsed_until_failure_s is not None
    assert released == ["cpu"], "the child gives memory back after an out-of-memory failure"
    with gzip.open(tmp_path / PREDICTIONS, "rt") as handle:
        assert len(handle.readlines()) == 16
    missing = outcome.measured.missing_measurements
    assert "energy_j" in missing and "device_event_s" in missing


@pytest.mark.unit
@pytest.mark.parametrize("exc, expected", [
    (torch.cuda.OutOfMemoryError("CUDA out of memory."), True),
    (torch.OutOfMemoryError("HIP out of memory. Tried to allocate 2.00 GiB"), True),
    (RuntimeError("CUDA error: out of memory"), True),
    (RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"), True),
    (MemoryError(), True),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: "
                  "you tried to allocate 206158430208 bytes. Error code 12 (Cannot allocate memory)"), True),
    (RuntimeError("mat1 and mat2 shapes cannot be multiplied"), False),
])
def test_out_of_memory_is_recognised_whichever_layer_raised_it(exc, expected):
    assert faults.is_out_of_memory(exc) is expected
    assert faults.reason(exc).startswith("out of memory") is expected


@pytest.mark.unit
def test_a_cpu_pass_has_no_device_event_time_and_says_why():
    events = timing.DeviceEvents.for_device(torch.device("cpu"))
    events.record_start()
    events.record_end()
    value, reason = events.result(completed=True)
    assert value is None and reason.startswith("CPU pass: no device events")


@pytest.mark.unit
def test_device_event_time_comes_from_the_events_in_seconds():
    events = timing.DeviceEvents(FakeEvent)
    events.record_start()
    events.record_end()
    assert events.result(completed=True) == (pytest.approx(1.2345), "")
    assert events.result(completed=False) == (None, "pass did not complete")


def test_a_cpu_pass_logs_the_counter_and_leaves_empty_cells_with_their_reasons(store, corpus_dir, model_dir,
                                                                                protocol_file):
    """Through the launcher: the counter named as a tag, energy_j and device_event_s absent with reasons
    in verdict.json (this machine's RAPL decides whether a CPU counter exists)."""
    result = CliRunner().invoke(main, ["pass", "--variant", "batch8", "--corpus", str(corpus_dir / "comparison.jsonl"),
                                       "--model", str(model_dir), "--variants", str(VARIANTS), "--experiment", "t",
                                       "--protocol", str(protocol_file)])
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    (run,) = client.search_runs([client.get_experiment_by_name("t").experiment_id])
    verdict = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id,
                                                                  artifact_path="verdict.json")).read_text())
    here = boards.rapl_board()
    if here.spec is None:
        assert "energy_j" not in run.data.metrics
        assert verdict["missing_measurements"]["energy_j"] == here.reason
        assert run.data.params[ENERGY_COUNTER_TAG] == f"none: {here.reason}"
    else:
        assert "energy_j" in run.data.metrics or "energy_j" in verdict["missing_measurements"]
    assert "device_event_s" not in run.data.metrics
    assert verdict["missing_measurements"]["device_event_s"].startswith("CPU pass: no device events")
    assert "energy" in verdict["device_facts"]
