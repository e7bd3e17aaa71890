"""The installed ROCm / PyTorch pair against AMD's compatibility matrix: dated snapshots side by side, the
newest used and named by doctor and by each pass's manifest on a ROCm device (PROTOCOL §2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.inputs import rocm, shipped
from gpucost_mlflow.execution import environment
from tests.helpers import FIRST_ROCM_MATRIX

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.unit


def test_the_newest_dated_snapshot_is_used_and_the_first_is_kept():
    assert shipped.newest(rocm.MATRIX, ROOT / "catalog").name == "rocm-framework-matrix-2025-11-26.csv"
    assert rocm.check(rocm.load_matrix(FIRST_ROCM_MATRIX), "6.0.32830", "2.1.2", "2024-03-22").status == "listed"


def test_a_listed_pair_names_the_snapshot_it_was_checked_against():
    verdict = rocm.check_installed("7.1.52802-26aae437f6", "2.9.1+rocm7.1", ROOT / "catalog")
    assert verdict.snapshot == "rocm-framework-matrix-2025-11-26.csv" and verdict.status == "listed"


@pytest.mark.parametrize("hip, torch_version, says", [
    ("6.4.43482", "2.7.0", "PyTorch 2.7 is not listed for ROCm 6.4.43482"),
    ("7.2.53211", "2.9.1", "ROCm 7.2.53211 is not in the 2025-11-26 matrix snapshot"),
])
def test_an_unlisted_pair_is_a_warning_never_a_pass(hip, torch_version, says):
    verdict = rocm.check_installed(hip, torch_version, ROOT / "catalog")
    assert verdict.status == "warning" and says in verdict.message


def test_the_manifest_records_the_snapshot_on_a_rocm_device():
    recorded = environment.rocm_matrix("7.0.51831", "2.8.0+rocm7.0")
    assert recorded == {"snapshot": "rocm-framework-matrix-2025-11-26.csv", "status": "listed",
                        "message": "ROCm 7.0.51831 with PyTorch 2.8 is listed in the 2025-11-26 matrix snapshot"}


def test_doctor_names_the_snapshot_it_checked_against(monkeypatch):
    real = environment.doctor_report
    monkeypatch.setattr(environment, "doctor_report",
                        lambda: {**real(), "hip_runtime": "6.4.43482", "torch": "2.6.0+rocm6.4.1"})
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0
    assert "ROCm matrix (checked against rocm-framework-matrix-2025-11-26.csv): listed" in result.output
    assert "energy counter: " in result.output
