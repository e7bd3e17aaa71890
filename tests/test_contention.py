"""Load from other processes during the measured part: read outside the clock, flagged "contended" above the
protocol's max_other_cpu_share, kept as a flag (never a verdict) in the run, the attempts table and the report; and a
measured part too short to time reliably, flagged the same way."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.measurement.contention import CpuSample, busy_seconds, contended, others
from gpucost_mlflow.tracking import schema
from tests.helpers import attempts_table, only_run, run_pass

STAT = "cpu  100 20 30 4000 50 6 7 8 0 0\ncpu0 50 10 15 2000 25 3 3 4 0 0\n"


@pytest.mark.unit
def test_busy_cpu_time_counts_user_nice_system_irq_softirq_and_steal_never_idle_or_iowait():
    assert busy_seconds(STAT, 100) == pytest.approx((100 + 20 + 30 + 6 + 7 + 8) / 100)


@pytest.mark.unit
def test_others_are_the_machines_busy_time_less_the_pass_own_over_the_cpu_time_it_had():
    other, share = others(CpuSample(10.0, 1.0), CpuSample(14.0, 3.0), wall_s=2.0, cpus=2)
    assert (other, share) == (pytest.approx(2.0), pytest.approx(0.5))
    assert contended(other, share, 0.25).startswith("other processes used 2.00 CPU-s during the measured pass, 50 %")
    assert contended(other, share, 0.6) == "" and contended(None, None, 0.25) == ""


@pytest.mark.integration
def test_a_pass_beside_a_busy_loop_is_flagged_contended_and_its_system_metrics_show_it(store, corpus_dir, model_dir,
                                                                                        protocol_file, tmp_path):
    """Also the protocol's min_measured_s and cooldown_s on the same pass (one pass less for the suite): the corpus is
    repeated inside one clock until it ran 2 s, exported once, and pass_s stays one corpus."""
    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(protocol_file.read_text() + "system_metrics_interval_s: 0.5\nmin_measured_s: 2\ncooldown_s: 0.2\n",
                        encoding="utf-8")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol, "batch8")
    finally:
        busy.kill()
        busy.wait()
    assert result.exit_code == 0, result.output
    run = only_run()
    assert run.data.tags[schema.STATUS] == "accepted"  # a flag, not a verdict
    assert run.data.metrics["other_cpu_share"] > 0.25
    assert "other processes used" in run.data.params[schema.CONTENDED]
    assert "**Contended:**" in run.data.tags[schema.NOTE]
    table = attempts_table("t")
    assert "other processes used" in table.iloc[0]["contended"]
    # MLflow's own timelines of the same pass, sampled by the launcher at the protocol's interval.
    assert run.data.params[schema.SYSTEM_METRICS_INTERVAL] == "0.5"
    history = MlflowClient().get_metric_history(run.info.run_id, "system/cpu_utilization_percentage")
    assert history and all(0.0 <= point.value <= 100.0 * 64 for point in history)
    assert "system/system_memory_usage_megabytes" in run.data.metrics
    repeated_inside_one_clock(run, table.iloc[0])


def repeated_inside_one_clock(run, row) -> None:
    """min_measured_s: 2 on a pass of 30 inputs: repetitions until the clock ran 2 s, pass_s one corpus, the outputs
    compared (when repeated) and exported once; the cooldown waited."""
    metrics = run.data.metrics
    repetitions, total = metrics["repetitions"], metrics["measured_total_s"]
    assert total >= 2.0 and metrics["pass_s"] == pytest.approx(total / repetitions, rel=1e-4)  # as logged: 5 digits
    # A loaded machine may take 2 s for one corpus: then one repetition, and nothing to compare.
    assert metrics.get("repetitions_identical", 1.0) == 1.0 and ("repetitions_identical" in metrics) == (repetitions > 1)
    assert metrics["cooldown_waited_s"] >= 0.2
    laps = MlflowClient().get_metric_history(run.info.run_id, "lap_s")  # each repetition's own lap, steps from 1
    assert sorted(point.step for point in laps) == list(range(1, int(repetitions) + 1))
    assert sum(point.value for point in laps) == pytest.approx(total, rel=0.01)
    assert metrics["first_lap_s"] == next(point.value for point in laps if point.step == 1)
    assert ("**Repeated:** the clock processed the corpus" in run.data.tags[schema.NOTE]) == (repetitions > 1)
    exported = Path(run.info.artifact_uri.removeprefix("file://")) / "predictions.jsonl.gz"
    with gzip.open(exported, "rt") as handle:
        assert sum(1 for _ in handle) == 30  # exported once: one corpus
    assert row["repetitions"] == repetitions and row["pass_s"] == pytest.approx(total / repetitions, rel=1e-4)
    assert ("pass_s is one corpus: the clock processed it" in row["notes"]) == (repetitions > 1)
    assert "too short" not in row["notes"]


@pytest.mark.unit
def test_a_measured_part_under_a_second_is_too_short_to_time_reliably():
    from gpucost_mlflow.core.measurement.stats import too_short

    assert too_short(0.42) == "too short to time reliably (0.420 s < 1 s)"
    assert too_short(1.0) == "" and too_short(None) == ""
