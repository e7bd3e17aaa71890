"""The interface every workload kind offers, and what its child hands the runner (`Work`).

A kind is named data plus two modules found by convention and imported only when needed, so reading the registry
imports neither torch nor the child's code: `<package>.child.load(spec, device) -> Work` in the pass's child, and
`<package>.launch.describe(...)` / `.default_model(root)` in the launcher.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType


@dataclass
class Work:
    """A loaded workload: what the runner calls, in its order, around the measured clock.

    Every kind hands the runner the same five things, so the harness keeps what it does for all of them: ids,
    batching order, warm-up, the measured clock with device synchronisation, memory peaks, the child process,
    failures kept as rows, the export and its timing."""

    tokenizer: object  # the harness tokenizer (None where the workload needs none)
    model: object  # what `process` runs: a model, or the state the user's load() returned
    process: Callable  # (ids, texts, tokenizer, model, settings, device, on_batch) -> outputs with .ids; on a failure
    # it raises outcome.PassFailure carrying the finished batches' outputs
    utilisation: Callable  # (outputs, pass_s or None) -> FLOP metrics, or their missing reasons
    export: Callable  # (folder, outputs, duplicate_at) -> None: the deliverable files


@dataclass(frozen=True)
class Described:
    """A variant's workload as the launcher checked it: the manifest's model and workload sections, the labels."""

    workload: object  # core/inputs/workloads.Workload
    model: dict
    record: dict
    labels: list[str]


@dataclass(frozen=True)
class Kind:
    """One workload kind: its name as declared, what it delivers, and the package of its folder."""

    name: str  # the `workload:` value (user code: the kind `python`, declared as python:PATH_OR_MODULE)
    output: str  # labels | embeddings | generations; "" when it tells by what it returns (user code)
    package: str  # the folder's module path: <package>.child and <package>.launch

    def child(self) -> ModuleType:
        """The child-process side: `load(spec, device) -> Work`."""
        return importlib.import_module(f"{self.package}.child")

    def launch(self) -> ModuleType:
        """The launcher side: `describe(workload, variant, model_path, protocol) -> Described`, `default_model(root)`."""
        return importlib.import_module(f"{self.package}.launch")
