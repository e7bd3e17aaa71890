"""What a pass runs besides the built-in classifier (execution/runner.py): embeddings, generation, or the user's code.

Every workload hands the runner the same five things (`Work`), so the harness keeps what it does for
the classifier: ids, batching order, warm-up, the measured clock with device synchronisation, memory
peaks, the child process, failures kept as rows, the export and its timing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Work:
    """A loaded workload: what the runner calls, in its order, around the measured clock."""

    tokenizer: object  # the harness tokenizer (None where the workload needs none)
    model: object  # what `process` runs: a model, or the state the user's load() returned
    process: Callable  # (ids, texts, tokenizer, model, settings, device, on_batch) -> outputs with .ids; on a failure
    # it raises outcome.PassFailure carrying the finished batches' outputs
    utilisation: Callable  # (outputs, pass_s or None) -> FLOP metrics, or their missing reasons
    export: Callable  # (folder, outputs, duplicate_at) -> None: the deliverable files


def load(spec, device) -> Work:
    """Load the workload the spec's settings name (not the built-in classifier, which the runner loads itself)."""
    workload = spec.settings["workload"]
    if workload == "embeddings":
        from gpucost_mlflow.execution.workloads import embeddings

        return embeddings.load(spec, device)
    if workload == "generation":
        from gpucost_mlflow.execution.workloads import generation

        return generation.load(spec, device)
    from gpucost_mlflow.execution.workloads import user_code

    return user_code.load(spec, device)
