"""What makes a configuration (PROTOCOL.md §2): passes that differ in any of these fields are not the same thing
measured twice, and a conclusion is about the whole tested configuration.

The fields are the attempts table's columns of the same names (tracking/reader.py); device and variant name a
configuration, the others tell apart two configurations that share them.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

LABELS = {"workload": "workload", "engine": "engine", "lanes": "lanes", "model_revision": "model revision",
          "corpus_fingerprint": "corpus",
          "torch_build": "torch build", "cuda_runtime": "CUDA runtime", "hip_runtime": "HIP runtime",
          "driver": "driver",
          "torch_version": "torch", "transformers_version": "transformers", "engine_version": "engine version",
          "seed": "seed", "endpoint": "endpoint"}
SEEDS = ","  # between the seeds of one configuration ('0,1'): a protocol's seeds are repetitions of it


@dataclass(frozen=True)
class Identity:
    """One configuration as measured: its device and variant, and every other field that makes it what it is."""

    device: str
    variant: str
    workload: str = ""
    lanes: str = ""
    model_revision: str = ""
    corpus_fingerprint: str = ""
    torch_build: str = ""
    cuda_runtime: str = ""
    hip_runtime: str = ""
    driver: str = ""
    engine: str = ""  # what ran the workload (torch, onnxruntime, ...)
    # The stack's versions (empty on passes recorded before they were): after the fields above, so positional
    # records keep their order.
    torch_version: str = ""
    transformers_version: str = ""
    engine_version: str = ""
    # the seed its passes ran with (params `seed.torch`); under a protocol's seeds, every seed they ran at ('0,1'):
    # the seeds are repetitions of one configuration (core/judging/seeds.py)
    seed: str = ""
    # an endpoint pass's host, served model and server version (engine openai): the same variant sent to another
    # server is another configuration
    endpoint: str = ""

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The attempts-table columns of the fields beyond device and variant, in order."""
        return tuple(f.name for f in fields(cls))[2:]

    def differing(self, siblings: set[Identity]) -> list[str]:
        """The fields (beyond device and variant) in which the siblings of the same device and variant differ."""
        return [name for name in self.columns() if len({getattr(other, name) for other in siblings}) > 1]

    def distinction(self, siblings: set[Identity]) -> str:
        """'model revision a1b2c3d4e5f6, driver 580.1': what sets it apart from its siblings ('' when it has none)."""
        return ", ".join(f"{LABELS[name]} {_short(getattr(self, name))}" for name in self.differing(siblings))

    def values(self) -> tuple[str, ...]:
        return astuple(self)

    def held(self, name: str) -> tuple[str, ...]:
        """The values its passes carry in one field: each of its seeds for `seed` (several when pooled), else one."""
        value = getattr(self, name)
        return tuple(value.split(SEEDS)) if name == "seed" else (value,)


def pooled(seeds) -> str:
    """The seeds of one configuration as its identity holds them: distinct, in numeric order ('0,1,2')."""
    return SEEDS.join(sorted({str(seed) for seed in seeds}, key=lambda seed: (len(seed), seed)))


def _short(value: str) -> str:
    return (value[:12] if len(value) > 16 else value) or "not recorded"
