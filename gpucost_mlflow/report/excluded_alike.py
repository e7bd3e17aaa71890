"""The report's warning when one exclusion rule was not applied alike to the variants it compares (PROTOCOL.md §6):
the benchmark passes' flags from the attempts table and their exclusions' reasons, judged by
core/judging/excluded_alike.py."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from gpucost_mlflow.core.judging.excluded_alike import FlaggedPass, not_alike
from gpucost_mlflow.core.judging.exclusion_reasons import FLAGS
from gpucost_mlflow.core.judging.status import EXCLUDABLE, Status, excludable_failure, interrupted
from gpucost_mlflow.report.measured import BENCHMARK
from gpucost_mlflow.tracking.evidence import Exclusion


def warnings(table: pd.DataFrame, exclusions: Mapping[str, Exclusion]) -> list[str]:
    """One warning line per device and flag excluded for one variant and kept for another ([] when alike, or when
    no pass was excluded for a flag). `exclusions`: the evidence's, by run id; a flag column the table lacks
    (cold_shapes before it was recorded) flags no pass."""
    if not any(x.reason in FLAGS for x in exclusions.values()):
        return []
    bench = table[table["role"] == BENCHMARK]
    columns = [flag for flag in FLAGS if flag in bench]
    flagged = list(zip(*(bench[flag] for flag in columns))) if columns else [()] * len(bench)
    passes = []
    for run_id, variant, device, status, reason, values in zip(bench["run_id"], bench["variant"], bench["device"],
                                                                bench["status"], bench["reason"], flagged):
        carried = frozenset(flag for flag, value in zip(columns, values) if isinstance(value, str) and value.strip())
        excluded_for = ""
        if status == Status.EXCLUDED:  # its reason, else one no flag is: never counted as kept
            excluded_for = (exclusions[run_id].reason if run_id in exclusions else "") or "not recorded"
        passes.append(FlaggedPass(str(variant), str(device), carried, excluded_for,
                                  _excludable(str(status), str(reason or ""), "contended" in carried)))
    return not_alike(passes)


def _excludable(status: str, reason: str, contended: bool) -> bool:
    """Whether `gpucost exclude` would take the pass (tracking/exclusions.py): its timing, or a failure from outside."""
    if status in EXCLUDABLE:
        return True
    from_outside = excludable_failure(reason, "yes" if contended else "") and not interrupted(status, reason)
    return status == Status.FAILED and from_outside
