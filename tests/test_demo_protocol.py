"""The demo's job (issue 30, item 1; a 500-input slice since issue 36): 4,000 corpora of 500 inputs, where throughput
sets the hours billed, so the what-if decision separates configurations by committed cost instead of tying them at one
minimum bill."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.protocol_diff import changed_fields
from gpucost_mlflow.core.money.catalog import example_catalog
from gpucost_mlflow.core.names import FIRST_LAP_S, MEASURED_TOTAL_S, REPETITIONS
from tests.helpers import ROOT, SHIPPED_PROTOCOL
from tests.scenario import report

pytestmark = pytest.mark.unit

DEMO_PROTOCOL = ROOT / "projects" / "protocol-demo.yaml"
# Five passes each, in seconds per 500-input corpus: half of what `make demo` measured per 1,000 inputs on a 2-core CPU
# with native bf16 before the slice (the same 2 million inputs, so the same billed hours).
DURATIONS = {
    "batch8": (5.45, 5.25, 5.45, 5.4, 5.5),
    "batch8-lengthgrouped": (2.15, 2.45, 2.25, 2.55, 2.3),
    "batch8-bf16": (0.95, 0.9, 0.925, 0.95, 0.9),
}


def test_the_demo_protocol_is_the_shipped_one_on_a_slice_with_a_job_of_4000_corpora_a_second_stage_and_a_short_confirmation():
    demo = load_protocol(DEMO_PROTOCOL)
    assert demo.deliverables["expected"] == 4000 and demo.corpus_size == 500 and demo.settle_max_passes == 10
    assert demo.confirmation == ("", 20.0)  # a CPU demo's confirmation: 20 s, not the default 600 (README)
    assert "4,000 corpora of 500 texts" in demo.question and "(2 million inputs" in demo.question
    differences = changed_fields(SHIPPED_PROTOCOL.read_text(), DEMO_PROTOCOL.read_text())
    assert {d.field for d in differences} == {"question", "deliverables.expected", "deliverables.description",
                                              "corpus.file", "corpus.slice_of", "corpus.size", "corpus.buckets.short",
                                              "corpus.buckets.medium", "corpus.buckets.long",
                                              "settle.max_passes_per_variant",  # the demo's second stage
                                              "race.from_round",  # the demo's race: fewer passes to decide
                                              "child_imports",  # imports once a campaign: about 3 s a pass
                                              "confirmation.min_s",
                                              # its 0.50 bucket bar, what its 50 long inputs can show, is the
                                              # shipped protocol's own since 2026-12-05 (issue 61)
                                              "plan.start", "deadline",  # at_report and 96h: never a past window
                                              "min_measured_s"}  # its bf16 passes last under a second
    assert demo.min_measured_s == 3


def repeated(first_lap: float, min_measured_s: float = 3.0) -> dict:
    """What a pass under the demo's min_measured_s records of a corpus whose one lap takes first_lap seconds: the laps
    inside one clock of at least min_measured_s, their total and the first lap (pass_s, their mean, is first_lap)."""
    laps = max(1, math.ceil(min_measured_s / first_lap))
    return {REPETITIONS: laps, MEASURED_TOTAL_S: laps * first_lap, FIRST_LAP_S: first_lap}


def test_the_demo_job_priced_by_the_hour_separates_configurations_by_committed_cost(experiment, tmp_path):
    for variant, seconds in DURATIONS.items():
        for value in seconds:
            experiment(variant, "AMD EPYC", value, metrics_extra=repeated(value))
    catalog = tmp_path / "this-machine.csv"
    catalog.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))

    _, one_corpus = report(catalog=catalog)
    assert set(one_corpus["committed_cost"]) == {"0.50"}  # one corpus after 4 h setup: 5 h billed whatever the speed

    built, job = report(catalog=catalog, protocol_path=DEMO_PROTOCOL)
    committed = dict(zip(job["variant"], job["committed_cost"]))
    assert committed == {"batch8-bf16": "0.60", "batch8-lengthgrouped": "0.80", "batch8": "1.10"}
    assert built.decision.startswith("Decision: batch8-bf16 on AMD EPYC, this-machine hourly, 1 lot, 6 h billed")
    assert "covers 4,000 corpus(es) of 500 inputs" in built.decision


def demo_job(experiment, tmp_path, passes: dict, metrics=lambda seconds: None):
    """Each variant's passes on one CPU (`metrics`: what a pass of that duration records besides), reported over the
    demo's what-if hourly price at 0.10 USD; the report and its balance."""
    for variant, seconds in passes.items():
        for value in seconds:
            experiment(variant, "AMD EPYC", value, metrics_extra=metrics(value))
    catalog = tmp_path / "this-machine.csv"
    catalog.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))
    return report(catalog=catalog, protocol_path=DEMO_PROTOCOL)


def test_a_store_whose_fastest_configuration_has_only_sub_second_passes_is_not_decided_on_them(experiment, tmp_path):
    # The same durations, each pass timing one corpus alone: batch8-bf16's 0.90-0.95 s are too short to time, so it
    # is not separated from batch8-lengthgrouped, whose slowest pass would price it at 0.80: undecided, and more
    # passes do not help.
    built, _ = demo_job(experiment, tmp_path, DURATIONS)
    assert built.decision.startswith("No decision: undecided between batch8-bf16 on AMD EPYC at 0.60 USD and ")
    assert ("undecided: too short to time: set min_measured_s (batch8-bf16 on AMD EPYC too short to time reliably "
            "(0.900 s < 1 s))") in built.decision
    assert "more passes of durations the clock cannot time do not settle it" in built.decision
    from gpucost_mlflow.report import card

    assert "too short to time: set min_measured_s to separate batch8-bf16 from" in dict(card.lines(built))["Settle"]



def test_repeated_corpora_are_separated_on_their_whole_clocks_never_on_a_sub_second_lap(experiment, tmp_path):
    """Each pass repeats its 500 inputs inside a clock of at least 3 s (min_measured_s). The first laps, one corpus
    each, are sub-second and overlap (0.90-1.25 s against 1.00-1.15 s): read alone they would separate nothing. The
    decision reads each pass's time over its whole clock (0.90-0.91 s against 1.10-1.11 s, each from 3.6 s or more of
    clock), which separates them; stability still reads the laps (both within 1.5)."""
    laps = {"batch8-bf16": (0.9, 1.25, 0.9, 1.2, 0.95), "batch8-lengthgrouped": (1.1, 1.0, 1.15, 1.05, 1.1)}
    means = {"batch8-bf16": (0.90, 0.91, 0.90, 0.91, 0.90), "batch8-lengthgrouped": (1.10, 1.11, 1.10, 1.11, 1.10)}
    for variant, firsts in laps.items():
        for mean, lap in zip(means[variant], firsts):
            experiment(variant, "AMD EPYC", mean, metrics_extra={REPETITIONS: 4, MEASURED_TOTAL_S: 4 * mean,
                                                                  FIRST_LAP_S: lap})
    catalog = tmp_path / "this-machine.csv"
    catalog.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))
    built, _ = report(catalog=catalog, protocol_path=DEMO_PROTOCOL)
    fast = next(a for a in built.assessments if a.configuration.variant == "batch8-bf16")
    assert fast.configuration.durations.values == laps["batch8-bf16"] and fast.stable
    assert fast.configuration.separated_on == means["batch8-bf16"] and not fast.configuration.too_short
    assert built.decision.startswith("Decision: batch8-bf16 on AMD EPYC")
    assert ("the 97.5 % interval (95 % over two looks) of the difference, 0.190 to 0.210 s, excludes zero"
            in built.decision)  # the demo protocol declares a second stage: two looks

# The demo's undecided store (issue 41): three length-grouped configurations whose durations overlap, priced by the
# hour at 0.10 USD: batch16's slowest pass fits 11 billed hours, batch8's and batch32's need 12.
UNDECIDED = {
    "batch16-lengthgrouped": (4.6, 5.0, 5.3, 4.8, 5.1),
    "batch8-lengthgrouped": (4.5, 4.9, 6.0, 4.7, 5.2),
    "batch32-lengthgrouped": (4.7, 5.0, 6.1, 4.9, 5.4),
}


def test_on_the_demos_undecided_shape_the_card_rents_the_dearer_plan_runs_the_fastest_median_and_doubts_the_rest(
        experiment, tmp_path):
    from gpucost_mlflow.report import card

    built, job = demo_job(experiment, tmp_path, UNDECIDED)
    assert dict(zip(job["variant"], job["committed_cost"])) == {
        "batch16-lengthgrouped": "1.10", "batch8-lengthgrouped": "1.20", "batch32-lengthgrouped": "1.20"}
    lines = dict(card.lines(built))
    assert lines["No decision"].startswith("undecided between ")
    assert lines["Rent"].startswith("1.20 USD committed for this-machine hourly, 1 lot, 12 h billed")
    assert lines["Run"] == "batch8-lg, the fastest median (4.900 s), or any of them: the plan covers each"
    assert lines["In doubt"].startswith("0.10 USD: ")
