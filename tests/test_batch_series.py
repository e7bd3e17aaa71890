"""Batches sized for the device (core/campaign/batch_series.py): the series a GPU is measured at, known answers."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.campaign.batch_series import fits, next_batch, propose

pytestmark = pytest.mark.unit
GIB = 2**30


def _doubling(first_gib: float, sizes=(8, 16, 32, 64, 128, 256, 512, 1024, 2048)) -> dict[int, float]:
    """A memory estimate that doubles with the batch: first_gib at batch 8."""
    return {size: first_gib * GIB * size / 8 for size in sizes}


def test_unmeasured_sizes_double_until_the_next_would_not_fit_a_16_gib_device():
    """1 GiB at 8, 2 at 16 ... 8 at 64 fit 16 GiB; 16 at 128 does not (nor would 13.6, the margin's edge)."""
    series = propose(16 * GIB, _doubling(1.0))
    assert series.sizes == (8, 16, 32, 64)
    assert series.stopped == "batch 128 will not fit: 16.00 GiB estimated, more than 85 % of the device's 16.00 GiB"


def test_the_series_stops_at_the_first_size_no_longer_starved():
    utilisation = {8: 0.18, 16: 0.41, 32: 0.62}
    series = propose(140 * GIB, _doubling(0.1), utilisation, min_utilisation=0.5)
    assert series.sizes == (8, 16, 32)
    assert series.line() == "batch sizes 8, 16, 32: batch 32 is not starved (62 % busy, limit 50 %)"


def test_a_measured_size_at_the_limit_is_not_starved_and_one_below_goes_on():
    assert propose(140 * GIB, _doubling(0.1), {8: 0.5}).sizes == (8,)
    assert propose(140 * GIB, _doubling(0.1), {8: 0.49}, largest=16).sizes == (8, 16)


def test_no_batch_beyond_the_corpus():
    series = propose(140 * GIB, _doubling(0.01), largest=1000)
    assert series.sizes == (8, 16, 32, 64, 128, 256, 512)
    assert series.stopped == "batch 1024 would exceed the corpus's 1000 inputs"


def test_an_unknown_device_memory_or_estimate_proposes_nothing_blind():
    assert propose(None, _doubling(1.0)).sizes == (8,)
    assert "the device's memory is unknown" in propose(None, _doubling(1.0)).stopped
    series = propose(16 * GIB, {16: GIB})
    assert series.sizes == (8, 16) and series.stopped.startswith("batch 32's memory estimate is unknown")


def test_the_margin_keeps_a_guess_out():
    assert fits(13.6 * GIB, 16 * GIB) is True
    assert fits(13.7 * GIB, 16 * GIB) is False
    assert fits(None, 16 * GIB) is None and fits(GIB, None) is None


def test_a_starved_pass_names_the_next_batch_or_says_it_will_not_fit():
    assert next_batch(8, None, None).text() == "next batch size worth trying: 16"
    assert next_batch(8, 2 * GIB, 16 * GIB).text() == "next batch size worth trying: 16"
    said = next_batch(64, 15 * GIB, 16 * GIB, "twice the measured peak").text()
    assert said == ("next batch size 128 will not fit: 15.00 GiB estimated (twice the measured peak) for the "
                    "device's 16.00 GiB")
