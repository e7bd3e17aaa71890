"""What an embeddings pass records of its workload beyond the kind-neutral record: the encoder's pooling."""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_mlflow.core.kinds.workload import WorkloadRecord


@dataclass(frozen=True)
class Workload(WorkloadRecord):
    """The embedder's workload record: how token vectors are pooled into one per input."""

    pooling: str = ""
