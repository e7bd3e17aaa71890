"""The wheel every job installs: this gpucost, built from the checkout it runs from (or the one the user gives), so
the machines run exactly the code that launched them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

CHECKOUT = Path(__file__).resolve().parents[2]  # the folder holding gpucost_mlflow/ and, in a checkout, pyproject.toml


def build(out: Path) -> Path:
    """Build this checkout's wheel into `out` (pip, no dependencies, no network); its path."""
    if not (CHECKOUT / "pyproject.toml").is_file():
        raise GpucostError(f"gpucost runs from {CHECKOUT}, not from a checkout: pass --wheel FILE, a wheel of this "
                           "gpucost version, for the machines to install")
    with tempfile.TemporaryDirectory() as temp:
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                               "-w", temp, str(CHECKOUT)], capture_output=True, text=True, check=False)
        built = sorted(Path(temp).glob("gpucost_mlflow-*.whl"))
        if done.returncode != 0 or not built:
            last = (done.stderr.strip().splitlines() or ["no wheel written"])[-1]
            raise GpucostError(f"building gpucost's wheel from {CHECKOUT} failed ({last}): pass --wheel FILE")
        out.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(built[0], out / built[0].name))


def given(path: Path) -> Path:
    """A wheel the user gives: it must be a gpucost wheel file."""
    if not path.is_file() or not path.name.startswith("gpucost_mlflow-") or path.suffix != ".whl":
        raise GpucostError(f"--wheel {path}: not a gpucost_mlflow-*.whl file")
    return path
