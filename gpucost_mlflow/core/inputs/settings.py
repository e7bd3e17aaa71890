"""A pass's settings as one typed, frozen record: how a variant processes the corpus.

The variants file declares them, the launcher writes them into the pass's spec and manifest, the child and the
rules read them by attribute. Their recorded form (`record()`) is what the manifest, the params and the series locks
hold: `lanes` only when a pass splits, `engine` only when it is not torch, so records written before either existed
read back the same. Pure: no torch, no mlflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace

from gpucost_mlflow.core.kinds import engines, registry

DEFAULT_WORKLOAD = registry.DEFAULT
DEFAULT_ENGINE = engines.DEFAULT


@dataclass(frozen=True)
class Settings:
    """Everything a pass needs to know about how to process the corpus; every built-in kind reads the same record
    (none declares a setting of its own: a generation's task is the protocol's, not a variant's)."""

    batch_size: int
    precision: str  # fp32 | bf16 | fp16
    quantization: str  # none | dynamic-int8
    compile: bool  # torch.compile
    attention: str  # sdpa | eager
    padding: str  # longest
    max_length: int  # tokens an input is truncated to
    length_grouping: str  # none | sorted
    device: str  # auto | cpu | cuda
    workload: str = DEFAULT_WORKLOAD  # classification | embeddings | python:PATH_OR_MODULE (core/inputs/workloads.py)
    engine: str = DEFAULT_ENGINE  # what runs the workload: torch, onnxruntime, ctranslate2, vllm (core/kinds/engines.py)
    lanes: int = 1  # devices one pass splits its corpus over, each running a fixed slice at once (core/measurement/lanes.py)

    def record(self) -> dict:
        """The recorded form: what the manifest compares between variants and the params show."""
        values = asdict(self)
        if values["lanes"] == 1:
            values.pop("lanes")
        if values["engine"] == DEFAULT_ENGINE:
            values.pop("engine")
        return values

    @classmethod
    def from_record(cls, record: Mapping) -> Settings:
        """The record back from its recorded form (a spec, a manifest); a field it lacks takes its default."""
        return cls(**{key: record[key] for key in names() if key in record})

    def changed(self, **values) -> Settings:
        """The same settings with some fields set otherwise."""
        return replace(self, **values)

    def differing(self, other: Settings) -> list[str]:
        """The fields, in declaration order, whose values differ from the other's."""
        return [name for name in names() if getattr(self, name) != getattr(other, name)]


def names() -> tuple[str, ...]:
    """Every setting a variant declares, in declaration order."""
    return tuple(f.name for f in fields(Settings))
