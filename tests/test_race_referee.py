"""The live race's referee, asked after each round inside the campaign's clock, reads the race without the report's
writers: importing it costs the campaign no figure library (the rules it assesses under are the report's own)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def test_the_race_imports_no_figure_library():
    check = ("import sys; import gpucost_mlflow.report.race; "
             "found = sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib' or m.endswith('report.build')); "
             "sys.exit(str(found) if found else 0)")
    done = subprocess.run([sys.executable, "-c", check], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
