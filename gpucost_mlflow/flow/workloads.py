"""The launcher's side of a variant's workload: checked against the protocol, then described by its kind's folder
(gpucost_mlflow/workloads/<kind>/launch.py). The workload (declared value, kind, code digest) goes into the
manifest: it is part of a configuration's identity.
"""

from __future__ import annotations

from pathlib import Path

from gpucost_mlflow.core.inputs import workloads
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.inputs.variants import Variant
from gpucost_mlflow.core.kinds import engines, registry
from gpucost_mlflow.core.kinds.base import Described
from gpucost_mlflow.core.kinds.workload import EngineRecord, WorkloadRecord
from gpucost_mlflow.workloads import engine_cache

AUTO = "auto"

__all__ = ["AUTO", "Described", "default_model", "describe", "engine_record"]


def default_model(output: str, root: Path) -> Path:
    """`--model auto`: the default model of the built-in kind that delivers what the protocol judges."""
    return registry.for_output(output).launch().default_model(root)


def describe(variant: Variant, variants_path: Path, model_path: Path, protocol: Protocol) -> Described:
    """Check the workload against the protocol's output and describe its model and code (before anything is
    recorded)."""
    workload = workloads.parse(variant.settings.workload, variants_path.parent,
                               f"{variants_path}: variant '{variant.name}'")
    workloads.check_output(workload, protocol.acceptance.output, protocol.path)
    record = WorkloadRecord(declared=workload.declared, kind=workload.kind,
                            output=workload.output or "labels or embeddings, as its infer() returns them")
    return registry.kind(workload.kind).launch().describe(workload, variant, model_path, protocol, record)


def engine_record(variant: Variant, model_revision: str, device_type: str) -> EngineRecord:
    """What the manifest records of the engine that runs the pass: its name and version, and for an engine other
    than torch its export or conversion options (the execution provider among them), the cache folder they are
    kept in and whether it held them when the pass started. Refuses an engine that is not installed, in one line."""
    chosen = engines.engine(variant.settings.engine)
    if chosen.name == engines.DEFAULT:
        return EngineRecord(chosen.name, chosen.version())
    engines.check_installed(chosen.name, variant.name)
    implementation = registry.of_settings(variant.settings).child(chosen.name)
    options = implementation.options(variant.settings, device_type)
    if not getattr(implementation, "CACHED", True):  # nothing exported or converted: the engine loads the folder
        return EngineRecord(chosen.name, chosen.version(), options)
    keyed = engine_cache.keyed(implementation, options)
    folder = engine_cache.cache_folder(chosen.name, model_revision, chosen.version(), keyed)
    return EngineRecord(chosen.name, chosen.version(), options, str(folder), engine_cache.cached(folder) is not None)
