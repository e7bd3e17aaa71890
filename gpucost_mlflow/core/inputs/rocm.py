"""ROCm / PyTorch combinations against a dated snapshot of AMD's compatibility matrix (catalog/).

Snapshots are kept side by side as `rocm-framework-matrix-<date>.csv`; a check uses the newest and names it.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped

MATRIX = "rocm-framework-matrix"  # the snapshots' stem: rocm-framework-matrix-<date>.csv


@dataclass(frozen=True)
class MatrixCheck:
    status: str  # "listed" or "warning"
    message: str


def load_matrix(path: Path) -> dict[str, list[str]]:
    """ROCm release (major.minor or full) -> PyTorch versions listed for it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GpucostError(f"{path}: ROCm matrix snapshot not found") from None
    rows = {}
    for record in csv.DictReader(io.StringIO(text, newline="")):
        rows[record["rocm"].strip()] = [v.strip() for v in record["pytorch"].split(";") if v.strip()]
    return rows


def _minor(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def check(matrix: dict[str, list[str]], rocm_version: str, torch_version: str, snapshot: str) -> MatrixCheck:
    """Listed only when the snapshot names this ROCm release with this PyTorch minor version; anything else is a
    warning."""
    torch_minor = _minor(torch_version)
    candidates = [key for key in matrix if key == rocm_version or _minor(key) == _minor(rocm_version)]
    if not candidates:
        return MatrixCheck("warning", f"ROCm {rocm_version} is not in the {snapshot} matrix snapshot: combination "
                                      "unverified")
    listed = {_minor(v) for key in candidates for v in matrix[key]}
    if torch_minor in listed:
        return MatrixCheck("listed", f"ROCm {rocm_version} with PyTorch {torch_minor} is listed in the {snapshot} "
                                     "matrix snapshot")
    return MatrixCheck("warning", f"PyTorch {torch_minor} is not listed for ROCm {rocm_version} in the {snapshot} "
                                  f"matrix snapshot (listed: {', '.join(sorted(listed))}): combination unverified")


@dataclass(frozen=True)
class StackCheck:
    """The installed ROCm / PyTorch pair checked against one named snapshot: what the manifest and doctor record."""

    snapshot: str
    status: str
    message: str


def check_installed(rocm_version: str, torch_version: str, folder: Path | None = None) -> StackCheck:
    """The installed pair against the newest snapshot (default: those shipped in the package), named by its file."""
    path = shipped.newest(MATRIX, folder)
    verdict = check(load_matrix(path), rocm_version, torch_version, shipped.table_date(path))
    return StackCheck(path.name, verdict.status, verdict.message)
