"""Setup apart from rate (issue 62): every pass's clock holds at least two laps; the first pays each new input shape's
setup, the median of the later ones is the steady rate the decision reads, and a worker pays the setup once per
process. Known answers on plain data; the passes themselves: tests/test_shape_setup.py."""

from __future__ import annotations

import datetime as dt
import math
import re
from types import SimpleNamespace

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.measurement.repetitions import Laps, again, one_corpus_each, steady_or_whole
from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.forecast import Delivery, forecast
from gpucost_mlflow.core.names import LOAD_S, SHAPE_SETUP_S, WARMUP_S
from gpucost_mlflow.execution import batching, faults
from tests.helpers import SHIPPED_PROTOCOL

pytestmark = pytest.mark.unit

NAN = float("nan")


def test_the_clock_goes_on_until_it_holds_min_laps_and_min_measured_s():
    assert again(0.4, None, laps=1, min_laps=2) and not again(0.8, None, laps=2, min_laps=2)
    assert again(2.0, 3.0, laps=5, min_laps=2) and not again(3.1, 3.0, laps=5, min_laps=2)
    assert not again(0.4, None)  # one lap: a deliverable, delivered once


def test_the_first_lap_pays_the_setup_the_steady_lap_is_the_median_of_the_later_ones():
    laps = Laps.of([7.9, 0.71, 0.66, 0.69])  # an H200's bf16 pass: plans built once per shape, in the first lap
    assert laps.steady_s == 0.69 and math.isclose(laps.setup_s, 7.21) and math.isclose(laps.ratio, 7.9 / 0.69)
    assert laps.cold().startswith("first lap 7.900 s, 11.4x the steady 0.690 s: likely the setup of each new input")
    assert Laps.of([1.0, 1.2]).setup_s == 0.0  # never below 0: a first lap faster than the steady one pays nothing
    assert Laps.of([1.4, 1.0]).cold() == ""  # within 1.5 steady laps: not flagged
    assert Laps.of([1.0]).steady_s is None and Laps.of([1.0]).cold() == ""  # one lap tells nothing apart


def test_the_decision_reads_steady_laps_and_a_pass_recorded_before_them_as_it_was():
    # new passes: their steady lap; before issue 62: the first lap of a repeated clock, else pass_s
    assert one_corpus_each([2.0, 3.0, NAN], [1.5, 2.0, 2.2], [1.0, NAN, NAN]) == (1.0, 3.0, 2.2)
    assert steady_or_whole([1.0, NAN], [1.5, 2.0]) == (1.0, 2.0)
    assert one_corpus_each([], [1.5, 2.0]) == (1.5, 2.0) and steady_or_whole([], [1.5]) == (1.5,)


@pytest.mark.parametrize("field, default, values, refusal", [
    ("min_laps", 2, ((3, True), (1, False), (2.5, False), (True, False)),
     r"field 'min_laps' must be a whole number of laps >= 2"),
    ("child_imports", "per_pass", (("once", True), ("per_pass", True), ("never", False), ("true", False)),
     r"field 'child_imports' must be one of per_pass, once"),
])
def test_the_protocol_asks_two_laps_and_imports_per_pass_by_default_and_refuses_other_values(
        tmp_path, field, default, values, refusal):
    assert getattr(load_protocol(SHIPPED_PROTOCOL), field) == default
    for value, ok in values:
        path = tmp_path / "p.yaml"
        path.write_text(SHIPPED_PROTOCOL.read_text() + f"{field}: {str(value).lower()}\n")
        if ok:
            assert getattr(load_protocol(path), field) == value
        else:
            with pytest.raises(GpucostError, match=refusal):
                load_protocol(path)


def test_pad_to_multiple_of_rounds_each_batch_up_never_past_max_length_and_bounds_the_shapes():
    settings = SimpleNamespace(pad_to_multiple_of=32, max_length=256)
    assert [batching.width(lengths, settings) for lengths in ([5, 17], [33], [250, 12], [256])] == [32, 64, 256, 256]
    assert batching.width([5, 17]) == 17 and batching.width([5, 17], SimpleNamespace(pad_to_multiple_of=0)) == 17
    lengths = list(range(1, 257))  # every length a 256-token truncation allows, eight per batch
    plan = batching.batches(lengths, 8, "none")
    plain = {batching.shapes(lengths)(batch) for batch in plan}
    bounded = {batching.shapes(lengths, settings)(batch) for batch in plan}
    assert len(plain) == 32 and len(bounded) == math.ceil(256 / 32) == 8  # at most ceil(max_length / 32) lengths


def test_a_shape_setup_fault_sleeps_the_first_time_a_process_meets_a_shape(monkeypatch):
    slept = []
    monkeypatch.setattr(faults.time, "sleep", slept.append)
    fault = faults.parse("shape-setup:0.25")
    assert (fault.kind, fault.at, fault.seconds) == ("shape-setup", 0, 0.25)
    fault.first_shape()
    fault.fire(1)  # not a batch fault
    faults.parse("stall@1:2").first_shape()
    assert slept == [0.25]


PLAN = {"setup_hours": 0.5, "waiting_hours": 0, "planned_restarts": 1, "start": dt.datetime(2026, 12, 1)}


def test_the_forecast_pays_the_shape_setup_once_per_worker_process_as_a_named_term():
    # 1,000 corpora at a 2 s steady lap, 10 s load, 2 s warm-up, 36 s shape setup: one child and one restart pay
    # 2 x 48 s; under per_child 100, ten children and the restart: 11 x 48 s. The setup is never per corpus.
    medians = {LOAD_S: 10.0, WARMUP_S: 2.0, SHAPE_SETUP_S: 36.0}
    durations = Durations((2.0, 2.0, 2.0))
    one = forecast(PLAN, 1000, durations, medians, ())
    assert math.isclose(one.startup_h, 2 * 48 / 3600) and math.isclose(one.shape_setup_each_h, 36 / 3600)
    assert math.isclose(one.hours, 0.5 + 2 * 48 / 3600 + 1000 * 2 / 3600)
    assert "start-up ((1 + 1 restarts) x load + warm-up + 36 s shape setup)" in one.terms()
    children = forecast(PLAN, 1000, durations, medians, (), delivery=Delivery(per_child=100))
    assert math.isclose(children.startup_h, 11 * 48 / 3600)
    before = forecast(PLAN, 1000, durations, {LOAD_S: 10.0, WARMUP_S: 2.0}, ())  # a store from before issue 62
    assert "shape setup" not in before.terms() and math.isclose(before.startup_h, 2 * 12 / 3600)


H200 = "NVIDIA H200"
HOURLY = ("provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,billing,"
          "min_hours,increment_hours\ncloud,2026-12-01,h200,NVIDIA H200,1,,3.00,USD,quote,hourly,0.016667,"
          "0.000278\n")


def _laps(first: float, steady: float, shapes: int = 120) -> dict:
    """A pass's metrics with its two laps read apart (pass_s: their mean, as the clock records it)."""
    return {"first_lap_s": first, "steady_lap_s": steady, "shape_setup_s": max(0.0, first - steady),
            "distinct_shapes": float(shapes), "measured_total_s": first + steady, "repetitions": 2.0}


def test_a_comparison_is_decided_on_steady_laps_and_the_card_shows_the_setup_once_per_worker(experiment, tmp_path):
    # The H200's bf16 pass: a first lap of 7.9 s building a plan per shape, then 0.40 s laps; fp32 0.75 s then 0.70 s.
    # On first laps (or their mean, pass_s) bf16 looked ten times slower; on steady laps it is the faster, and the
    # cheaper for 20,000 corpora, its 7.5 s of setup paid once per worker process, never per corpus.
    from gpucost_mlflow.report import card
    from tests.scenario import report
    from tests.test_report import protocol_like_shipped

    for bf16_first, fp32_first in ((7.9, 0.75), (8.1, 0.76), (7.7, 0.74), (8.0, 0.75), (7.8, 0.77)):
        experiment("batch8-bf16", H200, (bf16_first + 0.40) / 2, metrics_extra=_laps(bf16_first, 0.40))
        experiment("batch8", H200, (fp32_first + 0.70) / 2, metrics_extra=_laps(fp32_first, 0.70))
    catalog = tmp_path / "h200.csv"
    catalog.write_text(HOURLY)
    built, _ = report(catalog, protocol_like_shipped(tmp_path, drop_deadline=True, expected=20000))
    (chosen,) = built.choice.chosen
    assert chosen.configuration.variant == "batch8-bf16" and chosen.configuration.durations.median == 0.40
    assert math.isclose(chosen.forecast.shape_setup_each_h * 3600, 7.5)
    window = dict(card.lines(built))["Window"]
    assert "of it 2 x 7.5 s shape setup, once per worker process" in window, window
    assert "0.0 h" not in window and re.search(r", \d+ (s|min) start-up, of it", window), window  # never "0.0 h"
    assert not any("before steady laps" in w for w in built.warnings)
    assert "start-up ((1 + 1 restarts) x load + warm-up + 7.5 s shape setup)" in chosen.forecast.terms()


def test_a_store_recorded_before_steady_laps_still_decides_and_says_its_rate_includes_setup(experiment):
    from tests.scenario import B200, report

    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds)
    built, _ = report()
    assert built.choice.decided
    assert (f"batch8 on {B200}: 5 of its 5 counted passes recorded before steady laps (issue 62): its one duration "
            "includes the setup of each new input shape, read as rate") in built.warnings
    notes = built.attempts["notes"]
    assert notes.str.contains("recorded before steady laps", regex=False).all()
