"""The order the workers are handed the tests in (tests/scheduling.py): every test once, each share slow first."""

from __future__ import annotations

import pytest

from tests.scheduling import SLOW_S, ordered

pytestmark = pytest.mark.unit

SLOW = [prefix for prefix in SLOW_S if not prefix.endswith("::")][:4]


def _suite() -> list[str]:
    """A collection where the slow tests sit at the back of their modules and the slow modules at the back."""
    ids = [f"tests/test_a{m}.py::test_{i}" for m in range(12) for i in range(20)]
    for prefix in SLOW:
        module = prefix.split("::")[0]
        ids += [f"{module}::test_quick_{i}" for i in range(5)] + [f"{prefix}_and_more"]
    return ids


def _shares(ids: list[str], workers: int) -> list[list[str]]:
    """The contiguous shares pytest-xdist's worksteal hands out first (equal counts, the first ones one longer)."""
    size, extra = divmod(len(ids), workers)
    shares, start = [], 0
    for index in range(workers):
        end = start + size + (index < extra)
        shares.append(ids[start:end])
        start = end
    return shares


def test_every_test_is_handed_out_once():
    ids = _suite()
    assert sorted(ordered(ids, 3)) == sorted(ids)


def test_each_workers_share_starts_with_a_slow_test():
    for workers in (2, 3):
        for share in _shares(ordered(_suite(), workers), workers):
            assert any(share[0].startswith(prefix) for prefix in SLOW), share[:3]


def test_a_modules_tests_stay_together_but_where_one_share_ends():
    found = ordered(_suite(), 3)
    modules = [test_id.split("::")[0] for test_id in found]
    runs = [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]
    assert len(runs) <= len(set(modules)) + 2  # two boundaries between three shares may each cut one module


def test_without_workers_the_order_is_the_collections():
    ids = _suite()
    assert ordered(ids, 1) == ids and ordered(ids, 0) == ids


def test_without_a_slow_test_the_order_is_the_collections():
    ids = [f"tests/test_a{m}.py::test_{i}" for m in range(5) for i in range(60)]  # heavy by count alone
    assert ordered(ids, 2) == ids
