"""Built-in greedy generation, as the launcher describes it: the causal LM (a folder or a GGUF file, hashed) and the
protocol's generation task."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import sources
from gpucost_mlflow.core.kinds.base import Described
from gpucost_mlflow.workloads.generation import child
from gpucost_mlflow.workloads.generation.settings import PROTOCOLS
from gpucost_mlflow.workloads.generation.workload import Workload


def default_model(root: Path) -> Path:
    """`--model auto` under a generations protocol: the packaged SmolLM2-135M-Instruct GGUF file."""

    return sources.package_path(*sources.DEFAULT_GENERATION_PACKAGE)


def task_of(variant, protocol):
    """The task the variant runs: the protocol's, with the variant's own max_new_tokens where it sets one (never
    above the protocol's: every output is read back against that ceiling)."""
    task = protocol.task
    own = getattr(variant.settings, "max_new_tokens", PROTOCOLS)
    if own == PROTOCOLS or task is None:
        return task
    if own > task.max_new_tokens:
        raise GpucostError(f"variant '{variant.name}': max_new_tokens {own} is above the protocol's "
                           f"generation.max_new_tokens {task.max_new_tokens} (the ceiling every output is read "
                           "against)")
    return replace(task, max_new_tokens=own)


def describe(workload, variant, model_path: Path, protocol, record) -> Described:
    """The model and the task; compile is refused (generate() would run the uncompiled model under its name)."""

    if variant.settings.compile:
        raise GpucostError(f"variant '{variant.name}': compile is not available for workload generation "
                           "(generate() would run the uncompiled model under a compiled variant's name)")
    labels = list(protocol.labels)
    model, run = child.describe(model_path, task_of(variant, protocol), labels)
    return Described(workload, model, record.extended(Workload, **run), labels)
