"""What a `python:` workload's child is given beyond the variant's settings: its module and the module's digest."""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_mlflow.core.kinds.workload import WorkloadRecord


@dataclass(frozen=True)
class Workload(WorkloadRecord):
    """User code's workload record: its module (a .py file, resolved, or an importable name), the code's digest,
    and whether the module declares flops()."""

    code: str = ""
    code_sha256: str = ""
    declares_flops: bool = False
