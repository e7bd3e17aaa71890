"""The permutation p-values of a report's separations, shared out over forked worker processes: the same numbers.

Integration, not unit: the pool is only used in a process running one thread (an xdist worker runs several), so the
check runs in a child process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

SCRIPT = """
import json
from gpucost_mlflow.core.measurement import p_values as pv
pairs = [([float(i) for i in range(12)], [0.5 + k + i for i in range(12 + k)]) for k in range(3)] + [([1, 2, 3], [4, 5, 6])]
pairs.append(([0.3 + i for i in range(12)], [float(i) for i in range(12)]))  # as many passes as the first: its splits
with pv.PValues(pairs) as p_values:
    pooled = bool(p_values._workers)
    shared = p_values.result()
print(json.dumps({"pooled": pooled, "shared": shared,
                  "alone": [pv.permutation_p_value(a, b) for a, b in pairs]}))
"""


def test_a_tables_p_values_shared_over_worker_processes_are_the_numbers_computed_one_after_another():
    """Each test draws its own seeded splits (those of a test of as many passes, drawn once), so sharing the pairs out
    over forked workers (a fresh process runs one thread) changes no p-value; the exact one rides along."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout)
    assert found["pooled"] == (len(os.sched_getaffinity(0)) >= 2)
    assert found["shared"] == found["alone"] and len(found["shared"]) == 5
    assert found["shared"][3] == pytest.approx(2 / 20)
