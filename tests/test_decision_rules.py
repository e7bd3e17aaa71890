"""Decisions that noise, overlap, under-sampling and exclusions cannot buy (PROTOCOL.md §5, §6, §9, §10), on stores
written through the project's own writer, each with a known answer (docs/costs.md, the scenario table)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucost_mlflow.core.measurement.stats import repetitions_needed, stability
from gpucost_mlflow.core.measurement.timeline import Span, sum_seconds, union_seconds
from gpucost_mlflow.core.money.breakeven import Priced, break_even
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.core.money.forecast import Forecast
from gpucost_mlflow.report import render, sections
from gpucost_mlflow.tracking import schema
from tests.helpers import CATALOG
from tests.scenario import B200, RTX, report
from tests.test_report import protocol_like_shipped

pytestmark = pytest.mark.unit

H = 3600.0


def standing(built, name: str) -> list[str]:
    """The decision table's row of one configuration, as its cells."""
    table = sections.decision_table(built)
    return next(row for row in table.rows if row[0] == name)


def test_runs_side_by_side_on_one_host_count_once_and_runs_on_two_hosts_apart():
    spans = [Span(0, 10, "a"), Span(0, 10, "a"), Span(5, 20, "a"), Span(0, 10, "b"), Span(30, 40, "a")]
    assert union_seconds(spans) == 20 + 10 + 10
    assert sum_seconds(spans) == 10 + 10 + 15 + 10 + 10


def test_concurrent_passes_on_a_two_gpu_lot_are_counted_once_one_7_day_package(experiment, tmp_path):
    # Five rounds of batch4 and batch8 side by side on the two GPUs of one B200 lot, 18 h each: 90 h, not 180 h.
    for round_seconds in (0.0, 20.0, 40.0, 60.0, 80.0):
        first = experiment("batch4", B200, 18 * H + round_seconds, host="b200-lot")
        experiment("batch8", B200, 18 * H + round_seconds + 10, host="b200-lot", beside=first)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, drop_deadline=True))
    batch8 = next(a for a in built.assessments if a.configuration.variant == "batch8")
    assert 90 < batch8.forecast.comparisons_h < 90.1  # the real schedule
    assert 180 < batch8.forecast.comparisons_sum_h < 180.2  # what adding every run's wall time said
    assert batch8.committed == Decimal("2071.00") and batch8.plan.periods == 1
    assert "1 x 7-day b200 package, 1 lot: 2,071.00 USD" in built.decision and "4,142.00" not in built.decision
    row = balance[balance["variant"] == "batch8"].iloc[0]
    assert row["comparisons_h"] < 90.1 and row["comparisons_sum_h"] > 180
    assert "if their overlaps were counted twice" in batch8.forecast.terms()
    assert "comparisons summed (h)" in render.markdown(built)


def test_one_pass_never_beats_five_it_is_under_sampled_and_named(experiment):
    for seconds in (10.1, 10.0, 10.2, 10.1, 10.3):
        experiment("batch8", B200, seconds)
    experiment("batch4", B200, 9.0)
    built, balance = report()
    batch4 = next(a for a in built.assessments if a.configuration.variant == "batch4")
    assert not batch4.feasible and batch4.under_sampled == "under-sampled (1 of 5)"
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200")
    assert "batch4 on NVIDIA B200 is under-sampled (1 of 5)" in built.decision
    (_, separation), = built.separations
    assert not separation.decided and "beyond the spread" not in separation.verdict
    assert "batch4 is under-sampled (1 of 5)" in separation.verdict
    assert standing(built, "batch4 on NVIDIA B200")[1] == "under-sampled (1 of 5)"
    assert balance[balance["variant"] == "batch4"].iloc[0]["feasibility"].startswith("under-sampled (1 of 5)")


STRADDLE_4 = (14.751, 14.801, 14.851, 14.951, 15.051)  # hours: median window 167.95 h, slowest 168.15 h
STRADDLE_8 = (14.851, 14.901, 14.951, 14.971, 15.001)  # hours: median window 168.05 h


def test_durations_straddling_the_7_day_boundary_commit_to_the_slow_end_plan_never_a_clean_110(experiment, tmp_path):
    for four, eight in zip(STRADDLE_4, STRADDLE_8):
        experiment("batch4", RTX, four * H)
        experiment("batch8", RTX, eight * H)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, drop_deadline=True))
    batch4 = next(a for a in built.assessments if a.configuration.variant == "batch4")
    assert batch4.forecast.hours < 168 < batch4.forecast.high_hours  # the median window alone would buy 110.00
    assert batch4.median_plan.total == Decimal("110.00") and batch4.committed == Decimal("220.00")
    assert batch4.saving == Decimal("110.00")
    assert "110.00 USD" not in built.decision.split(".")[0]
    # batch8 first: of the tie, the shortest slowest-pass forecast, the one to run (core/money/choice.py `to_run`)
    assert built.decision.startswith("Decision (tied): batch8 on NVIDIA GeForce RTX 4090 or batch4 on NVIDIA GeForce "
                                     "RTX 4090, 2 x 7-day rtx-4090 package, 1 lot: 220.00 USD")
    # batch4's possible saving (its median window fits one package) stays in the balance; the note speaks of batch8
    row = balance[balance["variant"] == "batch4"].iloc[0]
    assert row["committed_cost"] == "220.00" and row["median_plan_cost"] == "110.00" and row["possible_saving"] == "110.00"


UNDECIDED_A = (14.813, 14.843, 14.863, 14.883, 14.903)  # hours: slowest-pass window 167.90 h: one 7-day package
UNDECIDED_B = (14.833, 14.863, 14.893, 14.923, 15.163)  # overlaps A; slowest-pass window 168.16 h: two


def test_slow_end_plans_that_differ_only_by_noise_are_undecided_with_the_passes_it_would_take(experiment, tmp_path):
    for a, b in zip(UNDECIDED_A, UNDECIDED_B):
        experiment("batch4", RTX, a * H)
        experiment("batch8", RTX, b * H)
    built, _ = report(protocol_path=protocol_like_shipped(tmp_path, drop_deadline=True))
    costs = {a.configuration.variant: a.committed for a in built.assessments}
    assert costs == {"batch4": Decimal("110.00"), "batch8": Decimal("220.00")}
    assert built.decision.startswith("No decision: undecided between batch4 on NVIDIA GeForce RTX 4090 at 110.00 USD "
                                     "and batch8 on NVIDIA GeForce RTX 4090 at 220.00 USD")
    assert "passes per configuration would let the separation test find the observed difference" in built.decision
    assert "bought by noise" in built.decision
    assert standing(built, "batch8 on NVIDIA GeForce RTX 4090")[1].startswith("undecided")


def test_an_unstable_configuration_is_neither_chosen_nor_tied_and_the_fast_tight_one_wins_on_speed(experiment):
    runs = {}
    for round_index, (one, four, eight) in enumerate(zip((6.6, 6.8, 7.0, 7.2, 28.5), (2.06, 2.10, 2.12, 2.08, 2.14),
                                                          (1.38, 1.40, 1.42, 1.41, 1.39))):
        runs.setdefault("batch1", []).append(experiment("batch1", B200, one))
        experiment("batch4", B200, four)
        experiment("batch8", B200, eight)
    built, balance = report()
    batch1 = next(a for a in built.assessments if a.configuration.variant == "batch1")
    assert not batch1.stable and batch1.unstable == "unstable: re-measure (max/min 4.32 > 1.5)"
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200")  # not a tie of every configuration
    assert "Decision (tied)" not in built.decision
    assert "preferred at the same cost for speed" in built.decision and "spare at the slowest pass" in built.decision
    assert f"outlier pass(es): run {runs['batch1'][4][:8]} at 28.500 s" in built.decision
    assert standing(built, "batch1 on NVIDIA B200")[1].startswith("unstable: re-measure")
    assert standing(built, "batch4 on NVIDIA B200")[1] == "slower at the same cost"
    assert balance[balance["variant"] == "batch1"].iloc[0]["stability"].startswith("unstable")


def test_stability_names_the_passes_far_from_the_median():
    result = stability((6.6, 6.8, 7.0, 7.2, 28.5), 1.5)
    assert not result.stable and result.outliers == (4,)
    assert stability((2.06, 2.10, 2.14), 1.5).stable


def test_repetitions_needed_grow_as_the_difference_shrinks():
    assert repetitions_needed((10.0, 10.2, 10.1), (10.05, 10.25, 10.15)) > repetitions_needed((10.0, 10.2, 10.1),
                                                                                            (10.5, 10.7, 10.6))
    assert repetitions_needed((1.0, 1.0), (1.0, 1.0)) is None


def test_an_exclusion_that_decides_the_choice_is_named_in_the_note(experiment):
    for seconds in (10.1, 10.0, 10.2, 10.1, 10.3):
        experiment("batch8", B200, seconds)
        experiment("batch8-bf16", B200, seconds / 2)
    # Written as an older gpucost wrote it, before `exclude` refused a rejected pass: the quality failure excluded.
    hidden = experiment("batch8-bf16", B200, 5.0, status="excluded", reason="another job on the machine",
                        quality="failed: quality", tags_extra={
                            schema.EXCLUDED_CAUSE: "another job on the machine", schema.EXCLUDED_BY: "someone",
                            schema.EXCLUDED_AT: "2026-11-30T10:00:00+00:00", schema.STATUS_BEFORE_EXCLUSION: "rejected",
                            schema.REASON_BEFORE_EXCLUSION: "quality: reference_agreement 0.90 < 0.97"})
    built, _ = report()
    assert built.decision.startswith("Decision: batch8-bf16 on NVIDIA B200")
    assert f"Excluded run {hidden[:8]} of batch8-bf16 on NVIDIA B200 (was rejected" in built.decision
    assert "without that exclusion it would not be chosen (1 rejected attempt(s)" in built.decision


def test_an_exclusion_that_changes_nothing_is_not_named(experiment):
    for seconds in (10.1, 10.0, 10.2, 10.1, 10.3):
        experiment("batch8", B200, seconds)
    experiment("batch8", B200, 10.2, status="excluded", reason="host maintenance", tags_extra={
        schema.EXCLUDED_CAUSE: "host maintenance", schema.STATUS_BEFORE_EXCLUSION: "accepted"})
    built, _ = report()
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200") and "Excluded run" not in built.decision


def _forecast(fixed_h: float, per_h: float) -> Forecast:
    return Forecast(setup_h=fixed_h, waiting_h=0.0, comparisons_h=0.0, comparisons=0, comparisons_estimated=0,
                    restarts=0, startup_h=0.0, deliverables=1, per_deliverable_h=(per_h, per_h, per_h))


def test_break_even_compares_only_where_both_meet_the_deadline_and_says_where_one_stops():
    seed = load_catalog(CATALOG)
    rtx = Priced("rtx", _forecast(4.0, 1.0), tuple(seed.for_gpu("rtx-4090")), deadline_h=96.0)
    b200 = Priced("b200", _forecast(4.0, 0.3), tuple(seed.for_gpu("b200")), deadline_h=96.0)
    result = break_even(rtx, b200, 1)
    assert result.deadline_reach == (92, 306)
    assert "rtx stops meeting the deadline above 92 deliverables" in result.describe()
    assert "b200 stops meeting the deadline above 306 deliverables" in result.describe()
    assert "does not flip between 1 and 92 deliverables (where both meet the deadline)" in result.describe()
    late = break_even(Priced("late", _forecast(100.0, 1.0), tuple(seed.for_gpu("rtx-4090")), deadline_h=96.0), b200, 1)
    assert late.describe().startswith("late vs b200: not compared at 1 expected deliverable(s): late misses the "
                                      "deadline at every volume")
    assert "does not flip" not in late.describe()


def test_a_deliverable_stream_per_idle_gpu_only_when_the_protocol_says_side_by_side(experiment, tmp_path):
    for seconds in (10 * H, 10.1 * H, 10.2 * H, 10.1 * H, 10 * H):
        experiment("batch8", B200, seconds)
    plain = protocol_like_shipped(tmp_path, drop_deadline=True, expected=10)
    (alone,), _ = report(protocol_path=plain)[0].assessments, None
    assert alone.forecast.streams == 1 and "one deliverable after another" in alone.forecast.terms()
    side = tmp_path / "side.yaml"
    side.write_text(plain.read_text().replace("  expected: 10\n", "  expected: 10\n  side_by_side: true\n"))
    (paired,), _ = report(protocol_path=side)[0].assessments, None
    assert paired.forecast.streams == 2 and "2 deliverables side by side on the lot's 2 GPUs" in paired.forecast.terms()
    assert paired.forecast.deliverables_h == pytest.approx(alone.forecast.deliverables_h / 2)


def test_a_year_old_running_pass_from_another_host_is_interrupted_never_an_open_or_failed_attempt(experiment):
    from tests.test_heartbeat import YEAR_AGO, running_pass

    for seconds in (10.1, 10.0, 10.2, 10.1, 10.3):
        experiment("batch8", B200, seconds)
    for seconds in (12.1, 12.0, 12.2, 12.1):
        experiment("batch4", B200, seconds)
    stale = running_pass(started=YEAR_AGO, beat=YEAR_AGO)  # batch8, left RUNNING by a launcher on host-b
    built, balance = report()
    row = built.attempts.set_index("run_id").loc[stale]
    assert row["status"] == "failed" and row["reason"].startswith("interrupted (no heartbeat since 2025-12-01")
    batch8 = next(a for a in built.assessments if a.configuration.variant == "batch8")
    assert batch8.configuration.counts["interrupted"] == 1 and batch8.feasible  # five counted passes, all accepted
    assert "1 interrupted attempt(s) not counted" in batch8.feasibility
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200")
    assert balance[balance["variant"] == "batch8"].iloc[0]["interrupted_attempts"] == 1


def test_an_interrupted_slot_not_run_again_leaves_the_configuration_under_sampled(experiment):
    for seconds in (10.1, 10.0, 10.2, 10.1):
        experiment("batch8", B200, seconds)
    experiment("batch8", B200, None, status="failed", reason="interrupted (launcher stopped before the attempt was recorded)")
    built, _ = report()
    (batch8,) = built.assessments
    assert batch8.under_sampled == "under-sampled (4 of 5)"
    assert batch8.feasibility.endswith("1 interrupted attempt(s) not counted (resume the campaign)")
    assert built.decision.startswith("No decision: no configuration is feasible")


def test_concurrent_counts_match_pairwise_overlap_on_every_host():
    import random

    from gpucost_mlflow.core.measurement.timeline import concurrent

    rng = random.Random(0)
    spans = [(f"r{i}", Span(s, s + rng.uniform(0.5, 20), rng.choice("ab"))) for i in range(300)
             for s in [rng.uniform(0, 500)]]
    brute = {run: sum(1 for other, o in spans if other != run and o.host == span.host and o.start_s < span.end_s
                      and span.start_s < o.end_s) for run, span in spans}
    assert concurrent(spans) == brute


def test_two_configurations_of_one_device_at_different_lots_are_told_apart_by_price_not_taken_for_one_price(tmp_path):
    # batch8 on one L4 lot and batch8-lanes2 on two: durations overlap (no separation), 86 corpora, 0.5 h setup,
    # hourly 1.00 per lot-hour (min 1 h, per 1 h). batch8's slowest-pass window 0.5 + 86 x 104 s = 2.98 h: 3.00;
    # priced at the slowest pass of the two (106 s, 3.03 h) it would commit 4 h = 4.00, still below the two-lot plan's
    # 2 x 4 h = 8.00: cheaper whatever the noise, so decided. "Same device, same price" took the 1.00 for noise and left
    # it undecided.
    from gpucost_mlflow.core.measurement.stats import Durations
    from gpucost_mlflow.core.money.choice import choose
    from gpucost_mlflow.core.money.decision import Configuration, Rules, assess

    path = tmp_path / "hourly.csv"
    path.write_text("provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,"
                    "billing,min_hours,increment_hours\ncloud,2026-12-01,l4,NVIDIA L4,1,,1.00,USD,quote,hourly,1,1\n")
    plan = {"setup_hours": 0.5, "waiting_hours": 0, "planned_restarts": 0, "start": None}
    one = Configuration("NVIDIA L4", "batch8", ["accepted"] * 5, Durations((100.0, 101.0, 102.0, 103.0, 104.0)), {})
    two = Configuration("NVIDIA L4", "batch8-lanes2", ["accepted"] * 5, Durations((99.0, 101.0, 102.0, 104.0, 106.0)),
                        {}, gpus=2)
    assessed = assess([one, two], Rules(load_catalog(path), plan, None, 86, required_passes=5))
    assert [a.committed for a in assessed] == [Decimal("3.00"), Decimal("8.00")]
    choice = choose(assessed, deadline_declared=False)
    assert choice.decided and [a.configuration.variant for a in choice.chosen] == ["batch8"], choice.detail
