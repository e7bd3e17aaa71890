"""The measured pass's clock (PROTOCOL §4): only the work itself between the two clock reads."""

from __future__ import annotations

import sys
import time

import pytest

from gpucost_mlflow.core.inputs.variants import get_variant, load_variants, read_declaration
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.execution import batching, runner, timing
from gpucost_mlflow.flow.launcher import PassRequest, prepare
from tests.helpers import ROOT, VARIANTS

FORBIDDEN_MODULES = ("hashlib", "_hashlib", "mlflow", "logging", "gzip", "zlib",
                     "gpucost_mlflow.core.judging.quality", "gpucost_mlflow.core.judging.verdicts",
                     "gpucost_mlflow.core.inputs.fingerprints", "gpucost_mlflow.tracking")


def _module_of(frame_or_function, event: str) -> str:
    if event.startswith("c_"):
        return getattr(frame_or_function, "__module__", None) or ""
    return frame_or_function.f_globals.get("__name__", "")


@pytest.mark.integration
def test_nothing_but_the_work_runs_between_the_two_clock_reads(tmp_path, corpus_dir, model_dir, monkeypatch):
    windows: list[list[tuple[str, str]]] = []
    recording: list[tuple[str, str]] | None = None

    class RecordingStopwatch(timing.Stopwatch):
        def start(self):
            nonlocal recording
            super().start()
            recording = []

        def stop(self):
            nonlocal recording
            windows.append(recording)
            recording = None
            return super().stop()

    def profile(frame, event, arg):
        if recording is None or event not in ("call", "c_call"):
            return
        if event == "call":
            recording.append((_module_of(frame, event), frame.f_code.co_name))
        else:
            recording.append((_module_of(arg, event), getattr(arg, "__qualname__", str(arg))))

    monkeypatch.setattr(timing, "Stopwatch", RecordingStopwatch)
    spec = runner.PassSpec(
        corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(model_dir), workdir=str(tmp_path),
        settings=get_variant(VARIANTS, "batch8").settings,
        implementation=registry.implementation(get_variant(VARIANTS, "batch8").settings),
    )
    sys.setprofile(profile)
    try:
        outcome = runner.run(spec, time.perf_counter_ns())
    finally:
        sys.setprofile(None)

    assert outcome.status == "completed"
    _, measured, export = windows
    called = {name for _, name in measured}
    assert "forward" in called and "loads" in called, "the measured window holds the reading and inference"
    offenders = sorted({f"{module}.{name}" for module, name in measured if module.startswith(FORBIDDEN_MODULES)})
    assert offenders == []
    assert any(module.startswith("gzip") for module, _ in export), "export is timed apart, after the clock"


@pytest.mark.unit
def test_stopwatch_synchronises_before_each_read():
    events = []
    watch = timing.Stopwatch(synchronize=lambda: events.append("sync"))
    watch.start()
    events.append("work")
    seconds = watch.stop()
    assert events == ["sync", "work", "sync"] and seconds >= 0


@pytest.mark.unit
def test_warmup_rule_is_identical_for_every_variant(corpus_dir, model_dir, protocol_file):
    """Whatever a classifier variant changes (batch size, precision, quantization and device, length grouping),
    its pass records the protocol's warm-up (8 inputs, 1 pass), not a rule of its own."""
    classifier_series = ("batch", "cheaper", "int8-cpu")
    recorded = {
        name: prepare(PassRequest(variant, corpus_dir / "comparison.jsonl", model_dir, "t", protocol_path=protocol_file,
                                  declared=read_declaration(VARIANTS), code_root=ROOT)).manifest.warmup
        for name, variant in load_variants(VARIANTS).items() if variant.series in classifier_series
    }
    assert len(recorded) == 6
    assert {(rule["inputs"], rule["passes"]) for rule in recorded.values()} == {(8, 1)}


@pytest.mark.unit
def test_length_grouping_sorts_batches_by_token_length_only_when_declared():
    lengths = [5, 1, 9, 3, 7]
    assert batching.batches(lengths, 2, "none") == [[0, 1], [2, 3], [4]]
    assert batching.batches(lengths, 2, "sorted") == [[1, 3], [0, 4], [2]]
