"""The report's warning when one exclusion rule was not applied alike to the variants it compares (PROTOCOL.md §6):
the benchmark passes' flags and their exclusions' reasons, judged by
core/judging/excluded_alike.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from gpucost_mlflow.core.judging.excluded_alike import FlaggedPass, not_alike
from gpucost_mlflow.core.judging.exclusion_reasons import FLAGS
from gpucost_mlflow.core.judging.status import EXCLUDABLE, Status, excludable_failure, interrupted
from gpucost_mlflow.report.measured import BENCHMARK, attempts_in
from gpucost_mlflow.tracking.attempts_table import Attempt
from gpucost_mlflow.tracking.evidence import Exclusion


def warnings(attempts: Sequence[Attempt] | pd.DataFrame, exclusions: Mapping[str, Exclusion]) -> list[str]:
    """One warning line per device and flag excluded for one variant and kept for another ([] when alike, or when
    no pass was excluded for a flag). `exclusions`: the evidence's, by run id; a flag a pass did not record (cold
    shapes before it was recorded) flags nothing."""
    if not any(x.reason in FLAGS for x in exclusions.values()):
        return []
    passes = []
    for a in attempts_in(attempts):
        if a.role != BENCHMARK:
            continue
        carried = frozenset(flag for flag in FLAGS if getattr(a.facts, flag, "").strip())
        excluded_for = ""
        if a.status == Status.EXCLUDED:  # its reason, else one no flag is: never counted as kept
            excluded_for = (exclusions[a.run_id].reason if a.run_id in exclusions else "") or "not recorded"
        passes.append(FlaggedPass(a.identity.variant, a.identity.device, carried, excluded_for,
                                  _excludable(a.status, a.reason, "contended" in carried)))
    return not_alike(passes)


def _excludable(status: str, reason: str, contended: bool) -> bool:
    """Whether `gpucost exclude` would take the pass (tracking/exclusions.py): its timing, or a failure from outside."""
    if status in EXCLUDABLE:
        return True
    from_outside = excludable_failure(reason, "yes" if contended else "") and not interrupted(status, reason)
    return status == Status.FAILED and from_outside
