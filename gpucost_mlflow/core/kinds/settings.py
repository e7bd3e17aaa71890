"""A pass's settings as one typed, frozen record: how a variant processes the corpus.

The variants file declares them, the launcher writes them into the pass's spec and manifest, the child and the rules
read them by attribute. Every built-in kind reads this record; a kind with settings of its own declares a subclass
adding them (`<package>/settings.py`, `Settings`: fields with defaults, checked in `__post_init__`), found by
`Kind.settings_record()`. The recorded form (`record()`) is what the manifest, the params and the series locks hold:
`lanes` only when a pass splits, `engine` only when it is not torch, `endpoint` only where one is declared,
`pad_to_multiple_of` only where it is set, so records written before any of them existed read back the same. Pure: no
torch, no mlflow.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from gpucost_mlflow.core.kinds import endpoint as endpoints
from gpucost_mlflow.core.kinds.endpoint import Endpoint
from gpucost_mlflow.core.records import Record

DEFAULT_WORKLOAD = "classification"  # a variant that names no workload runs the built-in classifier
DEFAULT_ENGINE = "torch"  # a variant that names no engine runs on PyTorch
SDPA_DEFAULT = "default"  # a variant that pins no attention kernel: torch chooses


@dataclass(frozen=True)
class Settings(Record):
    """Everything a pass needs to know about how to process the corpus."""

    batch_size: int
    precision: str  # fp32 | bf16 | fp16
    quantization: str  # none | dynamic-int8
    compile: bool  # torch.compile
    attention: str  # sdpa | eager
    padding: str  # longest
    max_length: int  # tokens an input is truncated to
    length_grouping: str  # none | sorted
    device: str  # auto | cpu | cuda
    workload: str = DEFAULT_WORKLOAD  # a kind's name, or python:PATH_OR_MODULE (core/inputs/workloads.py)
    # what runs the workload: torch, onnxruntime, ctranslate2, vllm (core/kinds/engines.py)
    engine: str = DEFAULT_ENGINE
    # devices one pass splits its corpus over, each running a fixed slice at once (core/measurement/lanes.py)
    lanes: int = 1
    endpoint: Endpoint | None = None  # engine openai: the OpenAI-compatible endpoint it sends the corpus to
    # each batch padded to the next multiple of this many tokens, never past max_length (0: to its longest input): the
    # tokenizer's argument of that name, which bounds the distinct shapes a pass runs
    pad_to_multiple_of: int = 0
    # the kernel torch's scaled_dot_product_attention is pinned to for the whole pass (execution/attention.py):
    # default (torch chooses) | flash | efficient | cudnn | math; recorded only when pinned
    sdpa_backend: str = SDPA_DEFAULT

    def __post_init__(self):
        if self.endpoint is not None and not isinstance(self.endpoint, Endpoint):  # read back from its record
            object.__setattr__(self, "endpoint", endpoints.parse(self.endpoint, "settings"))

    # The recorded form (what the manifest compares between variants and the params show) leaves these out at their
    # default, so records written before they existed read back the same.
    SPARSE = ("lanes", "engine", "endpoint", "pad_to_multiple_of", "sdpa_backend")

    def changed(self, **values) -> Settings:
        """The same settings with some fields set otherwise."""
        return replace(self, **values)

    def differing(self, other: Settings) -> list[str]:
        """The fields, in declaration order, whose values differ from the other's (a kind's own fields included)."""
        every = dict.fromkeys(names(type(self)) + names(type(other)))
        return [name for name in every if getattr(self, name, None) != getattr(other, name, None)]


def names(record: type[Settings] = Settings) -> tuple[str, ...]:
    """Every setting a variant of this record declares, in declaration order."""
    return tuple(f.name for f in fields(record))
