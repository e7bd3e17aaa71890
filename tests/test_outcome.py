"""The child's outcome crosses the process boundary as one typed record, read back as it was written."""

from __future__ import annotations

import signal

import pytest

from gpucost_mlflow.execution import batch_counter, child
from gpucost_mlflow.execution.outcome import BoardFacts, Counted, PassFailure, PassOutcome, Timings

pytestmark = pytest.mark.unit


def test_outcome_written_by_the_child_reads_back_equal(tmp_path):
    written = PassOutcome(status="completed", timings=Timings(pass_s=1.5, load_s=2.0), measured=Counted(
        completed_entries=30, memory_peaks={"mem_peak_rss_bytes": 1e9}, memory_counter="rss",
        metrics={"energy_j": 12.0}, missing_measurements={"device_event_s": "cpu"},
        tags={"gpucost.energy_counter": "rapl"}), board=BoardFacts({"driver": "x"}))
    written.write(tmp_path)
    assert PassOutcome.read(tmp_path) == written
    assert written.timings.named(("load_s", "warmup_s", "pass_s")) == {"load_s": 2.0, "pass_s": 1.5}


def test_merge_adds_metrics_missing_and_tags_and_refuses_unknown_fields():
    outcome = PassOutcome(measured=Counted(metrics={"a": 1.0}, tags={"t": "1"}))
    outcome.merge({"metrics": {"b": 2.0}, "tags": {"u": "2"}, "device_facts": {"driver": "y"}})
    assert outcome.measured.metrics == {"a": 1.0, "b": 2.0} and outcome.measured.tags == {"t": "1", "u": "2"}
    assert outcome.board.facts == {"driver": "y"}
    with pytest.raises(TypeError, match="no record"):
        outcome.merge({"not_a_field": 1})


def test_the_outcomes_parts_and_the_spec_are_frozen_and_the_builder_replaces_them_whole(tmp_path):
    from dataclasses import FrozenInstanceError

    from gpucost_mlflow.core.inputs.variants import get_variant
    from gpucost_mlflow.execution.runner import PassSpec
    from tests.helpers import VARIANTS

    outcome = PassOutcome()
    parts = (outcome.timings, outcome.measured, outcome.board)
    spec = PassSpec(corpus_path="", model_path="", workdir=str(tmp_path),
                    settings=get_variant(VARIANTS, "batch8").settings)
    for record, name in [*zip(parts, ("load_s", "completed_entries", "facts")), (spec, "workdir")]:
        with pytest.raises(FrozenInstanceError):
            setattr(record, name, None)
    outcome.timed(load_s=1.0)
    outcome.counted(completed_entries=3)
    outcome.merge({"device_facts": {"driver": "y"}})
    assert outcome.timings.load_s == 1.0 and outcome.measured.completed_entries == 3
    assert outcome.board.facts == {"driver": "y"}
    assert parts == (Timings(), Counted(), BoardFacts())


def test_child_killed_mid_pass_is_a_failed_outcome_counted_from_its_progress(tmp_path):
    batch_counter.BatchCounter(tmp_path).record(3, 16)
    outcome = child.read_outcome(tmp_path, -signal.SIGKILL, interrupted=False)
    assert outcome.status == "failed" and outcome.reason == "killed by signal SIGKILL"
    assert outcome.measured.completed_entries == 16 and "progress counter" in outcome.measured.completed_entries_reason


def test_child_dead_before_the_measured_pass_has_no_completed_count(tmp_path):
    outcome = child.read_outcome(tmp_path, 1, interrupted=True)
    assert outcome.measured.completed_entries is None and outcome.reason == "interrupted"


def test_failure_keeps_its_cause_partial_outputs_and_time_to_failure():
    cause = MemoryError("no room")
    failure = PassFailure.of(PassFailure(cause, partial=["done"]), elapsed_s=0.25)
    assert failure.cause is cause and failure.partial == ["done"] and failure.elapsed_s == 0.25
