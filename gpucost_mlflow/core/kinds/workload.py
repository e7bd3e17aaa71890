"""A pass's workload as the launcher checked it and its child reads it: the kind-neutral record and the engine's.

A kind that needs more in its child (generation: its task, model file and cache) subclasses `WorkloadRecord` in its
folder (`<package>/workload.py`, `Workload`: fields with defaults), found by `core/kinds/base.workload_record`, as it
subclasses `Settings`. The recorded form is the manifest's `workload` section and the child's spec. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpucost_mlflow.core.records import Keyed, Record


@dataclass(frozen=True)
class EngineOptions(Keyed, Record):
    """An engine's export, conversion or run options: what the engine cache is keyed by and the child builds the engine
    with. Each engine's implementation declares its own as a subclass with its fields (`<kind>/with_<engine>.py` or
    the module it shares, `Options`); read back from a record without its implementation at hand, every option is in
    `more`, by key."""

    more: dict = field(default_factory=dict)

    OPEN = "more"


@dataclass(frozen=True)
class EngineRecord(Record):
    """The engine that ran the pass: name and version; for an engine other than torch its export or conversion
    options (the execution provider among them), the cache folder and whether it held them when the pass started."""

    name: str
    version: str
    options: EngineOptions | None = None
    cache: str | None = None
    cache_present_at_start: bool | None = None

    SPARSE = ("options", "cache", "cache_present_at_start")


@dataclass(frozen=True)
class WorkloadRecord(Record):
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

    SPARSE = ("engine",)

    def record(self) -> dict:
        """The workload section: the kind's own fields before the engine's, as the manifest has always held it."""
        values = super().record()
        engine = values.pop("engine", None)
        return {**values, **({"engine": engine} if engine is not None else {})}
