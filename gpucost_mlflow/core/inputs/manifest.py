"""The pass manifest as one frozen record tree: everything that defines what was compared (PROTOCOL.md §2).

`Manifest` holds the corpus, model, stack, engine and workload records; a kind's own workload fields are a subclass
of `WorkloadRecord` (core/kinds/workload.py) in its folder (`<package>/workload.py`, found by
`core/kinds/base.workload_record`), as its own
settings subclass `Settings`. Each record has one `record()` (the manifest.json form) and `from_record()` pair, so
the document a pass logs and the record the launcher and the child read are one shape. Pure: no torch, no mlflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import EngineRecord, WorkloadRecord
from gpucost_mlflow.core.records import Keyed, Record

SCHEMA_VERSION = 1
# Fields that legitimately differ between two passes of one comparison.
RUN_SPECIFIC = ("run",)


@dataclass(frozen=True)
class CorpusRecord(Record):
    """The comparison corpus as the pass read it: its file, fingerprints, size, labels, buckets and sources."""

    path: str
    file_sha256: str
    fingerprint: str
    order_digest: str
    size: int
    labels: list = field(default_factory=list)
    buckets: dict = field(default_factory=dict)
    bucket_tokenizer: str = ""
    sources: list = field(default_factory=list)


@dataclass(frozen=True)
class ModelRecord(Record):
    """The model a pass loaded: its revisions, labels and provenance; what else its kind describes in `more`."""

    path: str
    revision: str
    tokenizer_revision: str
    labels: list = field(default_factory=list)
    architecture: str = ""
    sources: list = field(default_factory=list)
    trained_on: dict = field(default_factory=dict)
    more: dict = field(default_factory=dict)  # a kind's own facts of its model (user code: the folder's revision)

    OPEN = "more"  # recorded beside the fields, not under `more`


@dataclass(frozen=True)
class Stack(Keyed, Record):
    """The environment a pass ran in (PROTOCOL.md §2): the device and its runtime, the host, the libraries and how
    the model was compiled; each field absent (None) where the pass did not record it (its device has none, or it
    was recorded before the field existed), and what the child saw itself (`sdpa`, a build's own facts) in `more`."""

    backend: str | None = None
    torch_build: str | None = None
    cuda_runtime: str | None = None
    hip_runtime: str | None = None
    cudnn: str | None = None
    driver: str | None = None
    device_type: str | None = None
    device_names: list | None = None
    device_properties: dict | None = None
    cpu: str | None = None
    cpu_count: int | None = None
    torch_threads: int | None = None
    platform: str | None = None
    python_executable_version: str | None = None
    matmul_peak: dict | None = None
    compilation: str | None = None
    attention_backend: str | None = None
    torch_version: str | None = None
    transformers_version: str | None = None
    engine_version: str | None = None
    gpucost_version: str | None = None
    more: dict = field(default_factory=dict)

    SPARSE = ("backend", "torch_build", "cuda_runtime", "hip_runtime", "cudnn", "driver", "device_type", "device_names",
              "device_properties", "cpu", "cpu_count", "torch_threads", "platform", "python_executable_version",
              "matmul_peak", "compilation", "attention_backend", "torch_version", "transformers_version",
              "engine_version", "gpucost_version")
    OPEN = "more"


@dataclass(frozen=True)
class Warmup(Keyed, Record):
    """How a pass warmed up before its clock started: the inputs and passes, which inputs, and what recompiles."""

    inputs: int | None = None
    passes: int | None = None
    selection: str | None = None
    recompilations: str | None = None

    SPARSE = ("inputs", "passes", "selection", "recompilations")


@dataclass(frozen=True)
class Seeds(Record):
    """The seed a pass ran with and what makes its outputs reproducible (PROTOCOL.md §2)."""

    torch: int
    workload_deterministic: bool
    deterministic_algorithms: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool


@dataclass(frozen=True)
class PassPlace(Record):
    """The only pass-specific section: its variant and series, role, campaign and slot, and once open its run."""

    variant: str
    series: str = ""
    role: str = "benchmark"
    campaign_id: str = ""
    pass_index: str = ""
    run_id: str = ""
    experiment_id: str = ""

    def omitted(self, field) -> bool:
        """The run's ids only once the run is open."""
        return field.name in ("run_id", "experiment_id") and not self.run_id


@dataclass(frozen=True)
class Manifest:
    """The manifest as PROTOCOL §2 lists it: `run` holds the only pass-specific fields. `code` and `dependencies`
    are the environment's own open sections (their keys differ by build)."""

    run: PassPlace
    settings: Settings
    corpus: CorpusRecord
    model: ModelRecord
    stack: Stack
    code: dict
    dependencies: dict
    warmup: Warmup
    seeds: Seeds
    protocol_digest: str
    protocol_path: str
    workload: WorkloadRecord
    lanes: dict | None = None
    schema_version: int = SCHEMA_VERSION

    @property
    def engine(self) -> EngineRecord:
        return self.workload.engine

    @property
    def device(self) -> str:
        """The device names as the pass's tags and identity carry them."""
        return ", ".join(self.stack.device_names)

    @property
    def identity(self) -> Identity:
        """The configuration this pass measures as known before it runs (an endpoint's identity comes from its
        server, after: `Identity.endpoint` is then set by the reader from the pass's fact)."""
        stacked = {name: str(self.stack.get(name, "")) for name in Identity.columns() if name in self.stack}
        return Identity(device=self.device, variant=self.run.variant, workload=self.settings.workload,
                        lanes=str(self.settings.lanes), model_revision=self.model.revision,
                        corpus_fingerprint=self.corpus.fingerprint, engine=self.settings.engine,
                        seed=str(self.seeds.torch), **stacked)

    def opened(self, run_id: str, experiment_id: str) -> Manifest:
        """The manifest once its run exists: the run's and experiment's ids added."""
        return replace(self, run=replace(self.run, run_id=run_id, experiment_id=experiment_id))

    def record(self) -> dict[str, Any]:
        """The manifest.json document."""
        document = {
            "schema_version": self.schema_version,
            "run": self.run.record(),
            "settings": self.settings.record(),
            "corpus": self.corpus.record(),
            "model": self.model.record(),
            "stack": self.stack.record(),
            "code": self.code,
            "dependencies": self.dependencies,
            "warmup": self.warmup.record(),
            "seeds": self.seeds.record(),
            "protocol": {"digest": self.protocol_digest, "path": self.protocol_path},
            "engine": self.engine.record(),
            "workload": self.workload.record(),
        }
        if self.lanes is not None:
            document["lanes"] = self.lanes
        return document

    @classmethod
    def from_record(cls, document: Mapping, settings: type[Settings] = Settings,
                    workload: type[WorkloadRecord] = WorkloadRecord) -> Manifest:
        """A manifest.json read back, its settings and workload typed by the kind's records."""
        return cls(run=PassPlace.from_record(document["run"]), settings=settings.from_record(document["settings"]),
                   corpus=CorpusRecord.from_record(document["corpus"]),
                   model=ModelRecord.from_record(document["model"]), stack=Stack.from_record(document["stack"]),
                   code=dict(document["code"]), dependencies=dict(document["dependencies"]),
                   warmup=Warmup.from_record(document["warmup"]), seeds=Seeds.from_record(document["seeds"]),
                   protocol_digest=document["protocol"]["digest"], protocol_path=document["protocol"]["path"],
                   workload=workload.from_record(document["workload"]), lanes=document.get("lanes"),
                   schema_version=document.get("schema_version", SCHEMA_VERSION))


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


def differences(first: Manifest, second: Manifest, ignore: tuple[str, ...] = RUN_SPECIFIC) -> dict[str, tuple]:
    """Keys whose values differ between two manifests' recorded forms, run-specific sections left out."""
    a, b = flatten(first.record()), flatten(second.record())
    return {
        key: (a.get(key), b.get(key))
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key) and key.split(".")[0] not in ignore
    }
