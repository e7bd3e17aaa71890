"""Variants: the named pass settings declared in projects/variants.yaml."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path

import yaml

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.inputs import workloads, yaml_text
from gpucost_mlflow.core.kinds import endpoint, engines, registry
from gpucost_mlflow.core.kinds import settings as settings_record
from gpucost_mlflow.core.kinds.settings import Settings

CHOICES = {
    "precision": ("fp32", "bf16", "fp16"),
    "quantization": ("none", "dynamic-int8"),
    "attention": ("sdpa", "eager"),
    "padding": ("longest",),
    "length_grouping": ("none", "sorted"),
    "device": ("auto", "cpu", "cuda"),
    "sdpa_backend": ("default", "flash", "efficient", "cudnn", "math"),  # execution/attention.py
}


@dataclass(frozen=True)
class Variant:
    """One declared variant: its name, its settings, and the series it belongs to."""

    name: str
    settings: Settings
    series: str = ""
    reference: str = ""  # the reference variant its series names ("" when none)




def _defaults(record: type[Settings]) -> dict:
    """The settings a variant may leave out: those its record gives a default (lanes, engine, a kind's own)."""
    return {f.name: f.default for f in fields(record) if f.default is not MISSING}


def _build(name: str, values: dict, source: Path) -> Variant:
    workload = workloads.parse(values.get("workload", workloads.DEFAULT), source.parent, f"{source}: variant '{name}'")
    record = registry.kind(workload.kind).settings_record()
    values = {**_defaults(record), **values}
    known = set(settings_record.names(record))
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
    for key in ("batch_size", "max_length", "lanes"):
        if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] < 1:
            raise GpucostError(f"{source}: variant '{name}' needs {key} as a positive whole number")
    multiple = values["pad_to_multiple_of"]
    if not isinstance(multiple, int) or isinstance(multiple, bool) or multiple < 0:
        raise GpucostError(f"{source}: variant '{name}' needs pad_to_multiple_of as a whole number of tokens "
                           "(0: each batch to its longest input)")
    if not isinstance(values["compile"], bool):
        raise GpucostError(f"{source}: variant '{name}' needs compile as true or false")
    if values["engine"] not in engines.names():
        raise GpucostError(f"{source}: variant '{name}' has engine={values['engine']!r} "
                           f"(allowed: {', '.join(engines.names())})")
    if values.get("endpoint") is not None:
        values["endpoint"] = endpoint.parse(values["endpoint"], f"{source}: variant '{name}'")
    try:
        settings = record(**values)  # a kind's own record checks its own fields
    except GpucostError as exc:
        raise GpucostError(f"{source}: variant '{name}' {exc}") from None
    registry.check_engine(settings.engine, workload.kind, settings, f"{source}: variant '{name}'")
    return Variant(name, settings)


@dataclass(frozen=True)
class Series:
    """A series as declared: its members differ only in `fields` (from `reference`, when one is named)."""

    name: str
    fields: tuple[str, ...]
    members: tuple[str, ...]
    reference: str = ""
    together: bool = False  # each member differs from the reference in exactly all of `fields`
    combines: bool = False  # each member differs from the reference in one or more of `fields` (a combination)
    proposed_from: str = ""  # the campaign whose accepted changes a proposed series combines

    def declaration(self, variants: dict[str, Variant]) -> dict:
        """What the series declares, members' settings included: the text its lock digest is taken over."""
        return {"name": self.name, "fields": list(self.fields), "reference": self.reference, "together": self.together,
                "combines": self.combines, "members": {m: variants[m].settings.record() for m in self.members},
                "reference_settings": variants[self.reference].settings.record() if self.reference else {}}


SERIES_KEYS = ("field", "reference", "together", "combines", "proposed_from", "variants")


def _series(name: str, spec, source: Path) -> Series:
    where = f"{source}: series '{name}'"
    if not isinstance(spec, dict):
        raise GpucostError(f"{where}: expected a mapping with 'field' and 'variants'")
    unknown = sorted(set(spec) - set(SERIES_KEYS))
    if unknown:
        raise GpucostError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(SERIES_KEYS)})")
    declared = spec.get("field")
    declared = [declared] if isinstance(declared, str) else declared
    settings = registry.setting_names()
    if not declared or not isinstance(declared, list) or any(f not in settings for f in declared):
        raise GpucostError(f"{where}: 'field' must name one or more of {', '.join(settings)}")
    members = spec.get("variants")
    if not members or not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise GpucostError(f"{where}: 'variants' must list the names of its members")
    reference, together = spec.get("reference") or "", spec.get("together", False)
    combines, proposed_from = spec.get("combines", False), spec.get("proposed_from") or ""
    if not isinstance(reference, str) or not isinstance(together, bool) or not isinstance(combines, bool):
        raise GpucostError(f"{where}: 'reference' must be a variant name, 'together' and 'combines' true or false")
    for key in ("together", "combines"):
        if spec.get(key) and not reference:
            raise GpucostError(f"{where}: '{key}' needs a reference the members are compared with")
    if together and combines:
        raise GpucostError(f"{where}: 'together' and 'combines' exclude each other")
    return Series(name, tuple(declared), tuple(members), reference, together, combines, str(proposed_from))


def _check_series(series: Series, variants: dict[str, Variant], source: Path) -> None:
    """Refuse a series whose members differ in more (or other) than its declared field(s)."""
    where = f"{source}: series '{series.name}'"
    for name in (series.reference, *series.members):
        if name and name not in variants:
            raise GpucostError(f"{where}: '{name}' is not a declared variant; declared: {', '.join(variants)}")
    if series.reference in series.members:
        raise GpucostError(f"{where}: the reference {series.reference} is also listed among its variants")
    kinds = sorted({variants[name].settings.workload for name in (series.reference, *series.members) if name})
    if len(kinds) > 1:
        raise GpucostError(f"{where}: mixes workloads {', '.join(kinds)}; a series compares variants of one workload")
    declares = ", ".join(series.fields)
    if series.together:
        pairs = [(series.reference, m) for m in series.members]
        rule, fits = "changed together, all in each variant", lambda d: set(d) == set(series.fields)
    elif series.combines:
        pairs = [(series.reference, m) for m in series.members]
        rule, fits = "combined: only these fields, at least one", lambda d: d and set(d) <= set(series.fields)
    elif series.reference:
        pairs = [(series.reference, m) for m in series.members]
        rule, fits = "one field per variant", lambda d: len(d) == 1 and d[0] in series.fields
    else:
        pairs = [(a, b) for i, a in enumerate(series.members) for b in series.members[i + 1:]]
        rule, fits = "the only fields that may differ", lambda d: d and set(d) <= set(series.fields)
    for first, second in pairs:
        differ = variants[first].settings.differing(variants[second].settings)
        if not fits(differ):
            raise GpucostError(f"{where}: {second} differs from {first} in {', '.join(differ) or 'nothing'}; "
                               f"the series declares {declares} ({rule})")


@dataclass(frozen=True)
class Declaration:
    """A variants file read and checked once: its variants (defaults applied, each labelled with its series), its
    series, and where it came from. A campaign reads it once and hands it down to every slot and pass."""

    path: Path
    variants: dict[str, Variant]
    series: dict[str, Series]

    def variant(self, name: str) -> Variant:
        """The named variant, or a one-line error listing the valid names."""
        if name not in self.variants:
            raise GpucostError(f"unknown variant '{name}'; valid variants: {', '.join(self.variants)}")
        return self.variants[name]

    def members(self, series: str) -> list[str]:
        """The members of a declared series, or a one-line error listing the declared ones."""
        if series not in self.series:
            raise GpucostError(f"no series '{series}' in {self.path}; declared: {', '.join(self.series)}")
        return list(self.series[series].members)


def read_declaration(path: Path) -> Declaration:
    """The variants file, parsed once: every variant's fields and every series checked against them."""
    try:
        document = yaml_text.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise GpucostError(f"{path}: variants file not found") from None
    except yaml.YAMLError as exc:
        raise GpucostError(f"{path}: not valid YAML ({one_line(exc)})") from None
    if not isinstance(document, dict) or not isinstance(document.get("variants"), dict):
        raise GpucostError(f"{path}: expected a mapping with a 'variants' section")
    defaults = document.get("defaults") or {}
    variants = {
        name: _build(name, {**defaults, **(values or {})}, path)
        for name, values in document["variants"].items()
    }
    series = {name: _series(name, spec, path) for name, spec in (document.get("series") or {}).items()}
    member_of: dict[str, Series] = {}
    for declared in series.values():
        _check_series(declared, variants, path)
        for member in declared.members:
            if member in member_of:
                raise GpucostError(f"{path}: variant '{member}' is listed in two series, "
                                   f"'{member_of[member].name}' and '{declared.name}'")
            member_of[member] = declared
    labelled = {name: replace(variant, series=member_of[name].name, reference=member_of[name].reference)
                if name in member_of else variant for name, variant in variants.items()}
    return Declaration(path, labelled, series)


def load_series(path: Path) -> dict[str, Series]:
    """Every declared series of the file (checked the same way load_variants checks them)."""
    return read_declaration(path).series


def load_variants(path: Path) -> dict[str, Variant]:
    """All declared variants, defaults applied and every field checked; every series checked against them."""
    return read_declaration(path).variants


def get_variant(path: Path, name: str) -> Variant:
    """The named variant, or a one-line error listing the valid names."""
    return read_declaration(path).variant(name)
