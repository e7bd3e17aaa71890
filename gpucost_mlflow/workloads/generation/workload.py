"""What a generation pass's child is given beyond the variant's settings: the task, the labels its answers are read
as, and a GGUF model file with its dequantised cache (core/kinds/workload.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucost_mlflow.core.kinds.workload import WorkloadRecord
from gpucost_mlflow.workloads.generation.task import GenerationSettings


@dataclass(frozen=True)
class Workload(WorkloadRecord):
    """Generation's workload record: the protocol's task (the variant's own max_new_tokens applied), the labels, and
    for a GGUF file its path, name and digest with the folder it is dequantised into."""

    generation: GenerationSettings | None = None
    labels: list = field(default_factory=list)
    gguf: dict = field(default_factory=dict)  # {path, file, sha256} of a GGUF file; empty for a transformers folder
    cache: str = ""
    cache_present_at_start: bool | None = None  # a GGUF file: whether its dequantised folder existed already

    SPARSE = ("engine", "cache_present_at_start")
