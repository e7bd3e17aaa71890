"""A starved configuration names, in the report's summary, the next batch size worth trying (report/next_batch.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from gpucost_mlflow.report import next_batch

pytestmark = pytest.mark.unit
MIB = 2**20


def test_a_starved_gpu_configuration_is_told_to_double_its_batch_when_twice_its_peak_fits():
    assert next_batch.device_bytes("NVIDIA H200") == 141 * 2**30
    said = next_batch.text(8, {"mem_peak_allocated_bytes": 300 * MIB, "mem_peak_reserved_bytes": 400 * MIB},
                           "NVIDIA H200")
    assert said == "next batch size worth trying: 16"


def test_twice_the_reserved_peak_over_the_device_says_the_next_size_will_not_fit():
    said = next_batch.text(64, {"mem_peak_allocated_bytes": 6 * 2**30, "mem_peak_reserved_bytes": 7.5 * 2**30},
                           "Tesla T4")
    assert said == ("next batch size 128 will not fit: 15.00 GiB estimated (twice the measured peak) for the "
                    "device's 16.00 GiB")


def test_a_cpu_or_an_unknown_device_gets_the_size_without_a_fit_check():
    assert next_batch.device_bytes("AMD EPYC 7B13") is None
    assert next_batch.text(8, {"mem_peak_rss_bytes": 900 * MIB}, "AMD EPYC 7B13") == "next batch size worth trying: 16"
    assert next_batch.text(None, {}, "NVIDIA H200") == ""


def test_the_batch_size_is_read_from_the_attempts_rows():
    assert next_batch.batch_of(pd.DataFrame({"batch_size": [None, "32", "32"]})) == 32
    assert next_batch.batch_of(pd.DataFrame({"variant": ["batch8"]})) is None


def test_the_summary_carries_it_beside_the_starved_flag():
    from gpucost_mlflow.report.sections import flags_text
    from tests.synthetic_report import synthetic_report

    summary = synthetic_report().summaries[0]
    summary.starved, summary.busy = 5, {"gpu_utilisation": 0.17}
    summary.next_batch = next_batch.text(8, summary.memory, "NVIDIA H200")
    assert "; starved 5 of 5: 17 % mean GPU; next batch size worth trying: 16; busy GPU 17 %" in flags_text(summary, 5)
