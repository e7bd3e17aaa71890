"""The GPU paths of a pass, proven on the CPU with fakes: a real out-of-memory error type inside the batch
loop, the board's energy counter around the clock, and the device-event cross-check (PROTOCOL §4, §5)."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest
import torch

from gpucost_mlflow.core.variants import get_variant
from gpucost_mlflow.execution import faults, memory, models, runner

VARIANTS = Path(__file__).resolve().parents[1] / "projects" / "variants.yaml"


def spec_for(tmp_path, corpus_dir, model_dir) -> runner.PassSpec:
    return runner.PassSpec(
        corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(model_dir), workdir=str(tmp_path),
        settings=get_variant(VARIANTS, "batch8").settings(),
    )


def test_oom_pass_is_kept_as_failed_row_with_its_completed_count(tmp_path, corpus_dir, model_dir, monkeypatch):
    """torch's own out-of-memory type raised by the model at the third measured batch, not GPUCOST_FAULT."""
    armed, released = [], []
    load = models.load_classifier

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
    monkeypatch.setattr(models, "load_classifier", load_failing)
    monkeypatch.setattr(memory, "reset_peaks", lambda device: (armed.append(0), reset(device)))
    monkeypatch.setattr(memory, "release", lambda device: released.append(device.type))

    outcome = runner.run(spec_for(tmp_path, corpus_dir, model_dir), time.perf_counter_ns())

    assert outcome["status"] == "failed" and "pass_s" not in outcome
    assert outcome["reason"].startswith("out of memory: CUDA out of memory")
    assert outcome["completed_entries"] == 16  # the two batches finished before the third
    assert outcome["elapsed_until_failure_s"] is not None
    assert released == ["cpu"], "the child gives memory back after an out-of-memory failure"
    with gzip.open(tmp_path / runner.PREDICTIONS, "rt") as handle:
        assert len(handle.readlines()) == 16


@pytest.mark.unit
@pytest.mark.parametrize("exc, expected", [
    (torch.cuda.OutOfMemoryError("CUDA out of memory."), True),
    (torch.OutOfMemoryError("HIP out of memory. Tried to allocate 2.00 GiB"), True),
    (RuntimeError("CUDA error: out of memory"), True),
    (RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"), True),
    (MemoryError(), True),
    (RuntimeError("mat1 and mat2 shapes cannot be multiplied"), False),
])
def test_out_of_memory_is_recognised_whichever_layer_raised_it(exc, expected):
    assert faults.is_out_of_memory(exc) is expected
    assert faults.reason(exc).startswith("out of memory") is expected
