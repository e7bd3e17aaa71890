"""The pass manifest: everything that defines what was compared, assembled from plain parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpucost_mlflow.core.inputs.variants import Variant

SCHEMA_VERSION = 1
# Fields that legitimately differ between two passes of one comparison.
RUN_SPECIFIC = ("run",)


@dataclass(frozen=True)
class Environment:
    """Where a pass runs: the device stack actually present, the code's version, the installed packages."""

    stack: dict
    code: dict
    dependencies: dict


def build_manifest(
    *,
    variant: Variant,
    corpus: dict,
    model: dict,
    environment: Environment,
    warmup: dict,
    seeds: dict,
    run: dict,
) -> dict[str, Any]:
    """The manifest as PROTOCOL §2 lists it; `run` holds the only pass-specific fields."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {"variant": variant.name, "series": variant.series, **run},
        "settings": variant.settings.record(),
        "corpus": corpus,
        "model": model,
        "stack": environment.stack,
        "code": environment.code,
        "dependencies": environment.dependencies,
        "warmup": warmup,
        "seeds": seeds,
    }


def flatten(document: dict, prefix: str = "") -> dict[str, Any]:
    """Dotted keys for every leaf: what differs between two manifests is a set of keys."""
    flat = {}
    for key, value in document.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def differences(first: dict, second: dict, ignore: tuple[str, ...] = RUN_SPECIFIC) -> dict[str, tuple]:
    """Keys whose values differ between two manifests, run-specific sections left out."""
    a, b = flatten(first), flatten(second)
    return {
        key: (a.get(key), b.get(key))
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key) and key.split(".")[0] not in ignore
    }
