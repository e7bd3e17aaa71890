"""Variants: the named pass settings declared in projects/variants.yaml."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

import yaml

from gpucost_mlflow.core.errors import GpucostError

CHOICES = {
    "precision": ("fp32", "bf16", "fp16"),
    "quantization": ("none", "dynamic-int8"),
    "attention": ("sdpa", "eager"),
    "padding": ("longest",),
    "length_grouping": ("none", "sorted"),
    "device": ("auto", "cpu", "cuda"),
}


@dataclass(frozen=True)
class Variant:
    """One variant's settings; everything a pass needs to know about how to process the corpus."""

    name: str
    batch_size: int
    precision: str
    quantization: str
    compile: bool
    attention: str
    padding: str
    max_length: int
    length_grouping: str
    device: str
    series: str = ""

    def settings(self) -> dict:
        """The settings without the name: what the manifest compares between variants."""
        values = asdict(self)
        values.pop("name")
        values.pop("series")
        return values


def _build(name: str, values: dict, series: str, source: Path) -> Variant:
    known = {f.name for f in fields(Variant)} - {"name", "series"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise GpucostError(f"{source}: variant '{name}' has unknown field(s) {', '.join(unknown)}")
    missing = sorted(known - set(values))
    if missing:
        raise GpucostError(f"{source}: variant '{name}' lacks field(s) {', '.join(missing)}")
    for key, allowed in CHOICES.items():
        if values[key] not in allowed:
            raise GpucostError(
                f"{source}: variant '{name}' has {key}={values[key]!r} (allowed: {', '.join(allowed)})"
            )
    for key in ("batch_size", "max_length"):
        if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] < 1:
            raise GpucostError(f"{source}: variant '{name}' needs {key} as a positive whole number")
    if not isinstance(values["compile"], bool):
        raise GpucostError(f"{source}: variant '{name}' needs compile as true or false")
    return Variant(name=name, series=series, **values)


def load_variants(path: Path) -> dict[str, Variant]:
    """All declared variants, defaults applied and every field checked."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise GpucostError(f"{path}: variants file not found") from None
    except yaml.YAMLError as exc:
        raise GpucostError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(document, dict) or not isinstance(document.get("variants"), dict):
        raise GpucostError(f"{path}: expected a mapping with a 'variants' section")
    defaults = document.get("defaults") or {}
    series_of = {}
    for series, spec in (document.get("series") or {}).items():
        for member in (spec or {}).get("variants", []):
            series_of[member] = series
    return {
        name: _build(name, {**defaults, **(values or {})}, series_of.get(name, ""), path)
        for name, values in document["variants"].items()
    }


def get_variant(path: Path, name: str) -> Variant:
    """The named variant, or a one-line error listing the valid names."""
    variants = load_variants(path)
    if name not in variants:
        raise GpucostError(f"unknown variant '{name}'; valid variants: {', '.join(variants)}")
    return variants[name]
