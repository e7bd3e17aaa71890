"""A pass's workload as the launcher checked it and its child reads it: the kind-neutral record and the engine's.

A kind that needs more in its child (generation: its task, model file and cache) subclasses `WorkloadRecord` in its
folder (`<package>/workload.py`, `Workload`: fields with defaults), found by `core/kinds/base.workload_record`, as it
subclasses `Settings`. The recorded form is the manifest's `workload` section and the child's spec. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace


def known(cls, record: Mapping) -> dict:
    """The fields of `cls` a record holds (a field it lacks takes its default)."""
    return {f.name: record[f.name] for f in fields(cls) if f.name in record}


@dataclass(frozen=True)
class EngineRecord:
    """The engine that ran the pass: name and version; for an engine other than torch its export or conversion
    options (the execution provider among them), the cache folder and whether it held them when the pass started."""

    name: str
    version: str
    options: dict | None = None
    cache: str | None = None
    cache_present_at_start: bool | None = None

    def record(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_record(cls, record: Mapping) -> EngineRecord:
        return cls(**known(cls, record))


@dataclass(frozen=True)
class WorkloadRecord:
    """A variant's workload as the launcher checked it: the declared value, its kind and output, the engine; a kind
    that needs more in its child subclasses it in its folder (`<package>/workload.py`, `Workload`)."""

    declared: str
    kind: str
    output: str
    engine: EngineRecord | None = None

    def with_engine(self, engine: EngineRecord) -> WorkloadRecord:
        return replace(self, engine=engine)

    def extended(self, record: type[WorkloadRecord], **own) -> WorkloadRecord:
        """This record as a kind's own subclass, with the kind's fields."""
        return record(declared=self.declared, kind=self.kind, output=self.output, engine=self.engine, **own)

    def own(self) -> dict:
        """The kind's own fields in their recorded form (a subclass with nested records overrides it)."""
        base = {f.name for f in fields(WorkloadRecord)}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in base}

    def record(self) -> dict:
        engine = {"engine": self.engine.record()} if self.engine is not None else {}
        return {"declared": self.declared, "kind": self.kind, "output": self.output, **self.own(), **engine}

    @classmethod
    def from_record(cls, record: Mapping) -> WorkloadRecord:
        values = known(cls, record)
        if values.get("engine") is not None:
            values["engine"] = EngineRecord.from_record(values["engine"])
        return cls(**values)
