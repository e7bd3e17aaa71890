"""A pass's inputs: what the user asked for, and everything checked of it before a run exists.

`prepare` validates the role, the fault setting, the protocol, the variant's workload and the corpus (against the
protocol's spec for a benchmark pass), then assembles the manifest; it raises GpucostError before anything is
recorded, so a pass with an invalid input leaves no run behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.corpus import Corpus, corpus_metadata, read_corpus
from gpucost_mlflow.core.inputs.fingerprints import sha256_file
from gpucost_mlflow.core.inputs.manifest import CorpusRecord, Manifest, ModelRecord, PassPlace, Seeds, Stack, Warmup
from gpucost_mlflow.core.inputs.protocol import Protocol, load_protocol
from gpucost_mlflow.core.inputs.variants import Declaration, Variant
from gpucost_mlflow.core.judging.seeds import DEFAULT_SEED
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.kinds.endpoint import remote_device
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.execution import environment, faults, lanes, models, runner
from gpucost_mlflow.flow import workloads
from gpucost_mlflow.tracking import schema


@dataclass(frozen=True)
class Locked:
    """What a campaign resolved and locked once for all its passes: the experiment, and the protocol it locked (parsed,
    with the text its digest is taken over). A pass carrying it neither reads the protocol file nor locks again."""

    experiment_id: str
    protocol: Protocol
    protocol_text: str


@dataclass
class PassRequest:
    """What the user asked for, paths already resolved."""

    variant: Variant
    corpus_path: Path
    model_path: Path
    experiment: str
    protocol_path: Path
    declared: Declaration  # the variants file the variant came from, read once
    role: str = "benchmark"
    campaign_id: str = ""
    pass_index: str = ""
    code_root: Path = Path(".")
    parent_run_id: str = ""
    slot_tags: dict = field(default_factory=dict)
    on_child_start: Callable[[Path], None] | None = None
    repeat: bool = True  # a confirmation pass repeats its clock for confirmation.min_s unless it only gives outputs
    seed: int = DEFAULT_SEED  # the seed its child runs with: one of the protocol's seeds (core/judging/seeds.py)
    locked: Locked | None = None  # a campaign's pass: the experiment and protocol its campaign resolved and locked
    # a pass whose outputs come from elsewhere (a hosted API's batch results, flow/hosted.py): writes its export into
    # the work folder and returns its outcome, in place of a child
    imported: Callable[[Path], object] | None = None
    outputs: Path | None = None  # a fleet deliverable's outputs folder (its bucket's mount): no copy in the store


@dataclass
class Prepared:
    """Everything checked before a run exists."""

    manifest: Manifest
    corpus: Corpus
    protocol: Protocol
    protocol_text: str
    reference: Variant
    lanes: lanes.Layout | None = None  # a variant with lanes > 1: where each lane runs


def check_corpus_spec(corpus: Corpus, protocol: Protocol) -> None:
    """A benchmark pass runs on the corpus the protocol describes: size, buckets, labels."""
    buckets = {name: sum(1 for row in corpus.rows if row["bucket"] == name) for name in protocol.buckets}
    problems = []
    if len(corpus.rows) != protocol.corpus_size:
        problems.append(f"{len(corpus.rows)} inputs, the protocol says {protocol.corpus_size}")
    if buckets != protocol.buckets:
        problems.append(f"buckets {buckets}, the protocol says {protocol.buckets}")
    extra = sorted(set(corpus.labels) - set(protocol.labels))
    if extra:
        problems.append(f"labels {', '.join(extra)} not in the protocol")
    if problems:
        raise GpucostError(f"{corpus.path}: not the protocol's corpus ({'; '.join(problems)})")


def check_confirmation_corpus(corpus: Corpus, protocol: Protocol) -> None:
    """A confirmation run's corpus has the protocol's buckets and labels (its size is its own: rates are compared)."""
    unknown = sorted({row["bucket"] for row in corpus.rows} - set(protocol.buckets))
    extra = sorted(set(corpus.labels) - set(protocol.labels))
    if unknown or extra:
        what = "; ".join(filter(None, [unknown and f"buckets {', '.join(unknown)} not in the protocol",
                                       extra and f"labels {', '.join(extra)} not in the protocol"]))
        raise GpucostError(f"{corpus.path}: not a confirmation corpus of this protocol ({what})")


def measured_for(request: PassRequest, protocol: Protocol) -> float | None:
    """How long the measured clock runs at least: a confirmation run its confirmation.min_s, any other pass (the
    reference's outputs for a confirmation among them) the protocol's min_measured_s."""
    confirming = request.role == schema.CONFIRMATION_ROLE and request.repeat
    return protocol.confirmation.min_s if confirming else protocol.min_measured_s


def laps_for(request: PassRequest, protocol: Protocol) -> int:
    """Laps the measured clock holds at least: a benchmark or confirmation pass the protocol's min_laps (the first
    lap pays each new shape's setup, the later ones time the rate); a deliverable is delivered once, never repeated
    for a rate, and the reference's outputs for a confirmation are its outputs, whose time nothing reads."""
    outputs_only = request.role == schema.CONFIRMATION_ROLE and not request.repeat
    return 1 if request.role == schema.DELIVERABLE_ROLE or outputs_only else protocol.min_laps


def child_spec(corpus_path: Path, model_path: Path, workdir: Path, settings: Settings, protocol: Protocol,
               **more) -> runner.PassSpec:
    """A child's spec, built here only (a pass's, its audit's; a lane's and a delivery's derived from it): the corpus,
    the model resolved, the work folder, the settings with the module their kind and engine name, the protocol's
    warm-up; `more` what a measured pass adds (seed, fault, workload code and settings, measured time, cool-down)."""
    return runner.PassSpec(corpus_path=str(corpus_path), model_path=str(model_path.resolve()), workdir=str(workdir),
                           settings=settings, implementation=registry.implementation(settings),
                           warmup=dict(protocol.warmup), **more)


def prepare(request: PassRequest) -> Prepared:
    """Check every input and assemble the manifest; raises GpucostError before anything is recorded."""
    if request.role not in schema.ROLES:
        raise GpucostError(f"unknown role '{request.role}'; valid roles: {', '.join(schema.ROLES)}")
    faults.parse(os.environ.get(faults.ENV, ""))
    protocol = request.locked.protocol if request.locked else load_protocol(request.protocol_path)
    reference = request.declared.variant(protocol.acceptance.reference_variant)
    described = workloads.describe(request.variant, request.declared.path, request.model_path, protocol)
    labelled = request.role in ("benchmark", schema.CONFIRMATION_ROLE)
    corpus = read_corpus(request.corpus_path, labels=described.labels, labelled=labelled)
    if request.role == "benchmark":
        check_corpus_spec(corpus, protocol)
    elif request.role == schema.CONFIRMATION_ROLE:
        check_confirmation_corpus(corpus, protocol)
    meta = corpus_metadata(request.corpus_path)
    device = models.resolve_device(request.variant.settings.device)
    import torch

    corpus_record = CorpusRecord(
        path=str(request.corpus_path.resolve()), file_sha256=sha256_file(request.corpus_path),
        fingerprint=corpus.fingerprint, order_digest=corpus.order_digest, size=len(corpus.rows), labels=corpus.labels,
        buckets=meta.get("buckets", {}).get("bounds_tokens", {}),
        bucket_tokenizer=meta.get("buckets", {}).get("tokenizer_revision", ""), sources=meta.get("sources", []))
    model = ModelRecord.from_record(described.model)
    settings = request.variant.settings
    stack = environment.stack(device)
    elsewhere = remote_device(settings.endpoint)
    if elsewhere:  # the endpoint's server does the work: the pass's device is it, not this machine's
        stack.update(device_names=[elsewhere], backend="endpoint")
    stack["compilation"] = "torch.compile" if settings.compile else "none (eager)"
    stack["attention_backend"] = settings.attention
    engine = workloads.engine_record(request.variant, model.revision, device.type)
    dependencies = environment.package_versions()
    stack.update(torch_version=torch.__version__, transformers_version=dependencies.get("transformers", ""),
                 engine_version=engine.version, gpucost_version=dependencies.get("gpucost-mlflow", ""))
    layout = lanes.layout(settings.lanes, device) if settings.lanes > 1 else None
    manifest = Manifest(
        run=PassPlace(request.variant.name, request.variant.series, request.role, request.campaign_id,
                      request.pass_index),
        settings=settings, corpus=corpus_record, model=model, stack=Stack.from_record(stack),
        code=environment.code_version(request.code_root), dependencies=dependencies,
        warmup=Warmup.from_record({**runner.WARMUP_RULE, **protocol.warmup}),
        seeds=Seeds(torch=request.seed, workload_deterministic=registry.of_settings(settings).deterministic,
                    deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
                    cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
                    cudnn_benchmark=bool(torch.backends.cudnn.benchmark)),
        protocol_digest=protocol.digest, protocol_path=str(request.protocol_path),
        workload=described.record.with_engine(engine),
        lanes=lanes.manifest_record(corpus.rows, layout) if layout is not None else None,
    )
    text = request.locked.protocol_text if request.locked else request.protocol_path.read_text(encoding="utf-8")
    return Prepared(manifest, corpus, protocol, text, reference, layout)
