"""The order pytest-xdist's `worksteal` scheduler is handed the tests in, so the slowest start first.

worksteal gives each worker an equal, contiguous share of the collection, in order, and an idle worker later takes
the back half of the longest queue. A test of a minute that sits at the back of one share runs alone at the end while
the other workers wait (the fleet's preempted-job test ended `make test` 44 s after the rest on 2026-12-04). Here each
share starts with its slow modules (those holding a test of SLOW_S), dealt to the shares heaviest first (each to
the lightest share so far), their slowest tests first; the other modules fill the shares in their own order, and
stealing evens out the rest. Only the order changes: every test still runs, in one process per module as far as
the shares allow. Under `make unit` no module holds a slow test, so the order is the collection's.
"""

from __future__ import annotations

import os

import pytest

# Seconds of wall a test took under `make test` on 2 cores (--durations, 2026-12-04): only the order depends on them,
# so a stale figure costs time, never a result. A prefix counts for every test whose id starts with it.
SLOW_S = {
    "tests/test_mlflow_ui_browser.py::": 90,
    "tests/test_fleet.py::test_two_gpu_types_make_two_campaigns": 55,
    "tests/test_team.py::test_server_killed_mid_campaign": 40,
    "tests/test_campaign.py::test_ctrl_c_during_a_pass": 35,
    "tests/test_engines.py::test_onnxruntime_embeddings": 30,
    "tests/test_embeddings.py::test_mlflow_run_of_a_bf16": 30,
    "tests/test_mlflow_project.py::test_literal_mlflow_run": 30,
    "tests/test_generation.py::test_fp32_then_lower_precision": 30,
    "tests/test_team.py::test_four_concurrent_passes": 30,
    "tests/test_fleet.py::test_a_dry_run_writes_one_task": 25,
    "tests/test_model.py::test_model_prepare_saves": 22,
    "tests/test_mlflow_project.py::test_unknown_variant_through": 20,
    "tests/test_market.py::test_skypilots_catalog_is_imported": 20,
    "tests/test_benchmarks_run.py::test_the_engines_benchmark": 30,
}
OTHER_S = 0.3  # what any other test is counted for


def seconds(test_id: str) -> float:
    """A test's expected wall time: its entry in SLOW_S, else OTHER_S."""
    return next((s for prefix, s in SLOW_S.items() if test_id.startswith(prefix)), OTHER_S)


def ordered(test_ids: list[str], workers: int) -> list[str]:
    """The test ids in the order that gives each of `workers` contiguous shares its slow modules first."""
    if workers < 2 or not test_ids:
        return list(test_ids)
    modules: dict[str, list[str]] = {}
    for test_id in test_ids:
        modules.setdefault(test_id.split("::", 1)[0], []).append(test_id)
    weight = {name: sum(seconds(t) for t in ids) for name, ids in modules.items()}
    slow = sorted((name for name, ids in modules.items() if any(seconds(t) > OTHER_S for t in ids)),
                  key=lambda name: -weight[name])  # a module with a test of SLOW_S: none under `make unit`
    shares: list[list[str]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for name in slow:
        lightest = loads.index(min(loads))
        shares[lightest] += sorted(modules[name], key=lambda t: -seconds(t))
        loads[lightest] += weight[name]
    size, extra = divmod(len(test_ids), workers)
    rest = [t for name in modules if name not in slow for t in modules[name]]
    for index, share in enumerate(shares):
        room = size + (index < extra) - len(share)
        if room > 0:
            share += rest[:room]
            rest = rest[room:]
    shares[-1] += rest
    return [t for share in shares for t in share]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the selected tests (after -m and -k) in `ordered`'s order."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    by_id = {item.nodeid: item for item in items}
    if workers > 1 and len(by_id) == len(items):
        items[:] = [by_id[test_id] for test_id in ordered(list(by_id), workers)]
