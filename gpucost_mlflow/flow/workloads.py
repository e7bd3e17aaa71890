"""The launcher's side of a variant's workload: checked against the protocol, and what the manifest records of it.

The built-in classifier is described by its classifier folder (labels from its config), the built-in
embeddings by its encoder folder and pooling, the built-in generation by its causal LM (a folder or a
GGUF file, hashed) and the protocol's generation task, the user's code by its module file together with the
model folder its load() is given. The workload (declared value, kind, code digest) goes into the
manifest: it is part of a configuration's identity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import workloads
from gpucost_mlflow.core.inputs.fingerprints import directory_files, sha256_files
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.inputs.variants import Variant

AUTO = "auto"
DEMO_CLASSIFIER = Path("data/model")


@dataclass(frozen=True)
class Described:
    """A variant's workload as checked, with the manifest's model and workload sections and the allowed labels."""

    workload: workloads.Workload
    model: dict
    record: dict
    labels: list[str]


def default_model(output: str, root: Path) -> Path:
    """`--model auto`: the demo classifier for a labels protocol, the packaged all-MiniLM-L6-v2 files for embeddings,
    the packaged SmolLM2-135M-Instruct GGUF file for generations."""
    if output == "generations":
        from gpucost_mlflow.core.inputs import sources

        return sources.package_path(*sources.DEFAULT_GENERATION_PACKAGE)
    if output == "embeddings":
        from gpucost_mlflow.prepare import base_model_dir

        return base_model_dir()
    return root / DEMO_CLASSIFIER


def describe(variant: Variant, variants_path: Path, model_path: Path, protocol: Protocol) -> Described:
    """Check the workload against the protocol's output and describe its model and code (before anything is recorded)."""
    from gpucost_mlflow.execution import models

    workload = workloads.parse(variant.workload, variants_path.parent, f"{variants_path}: variant '{variant.name}'")
    workloads.check_output(workload, protocol.acceptance.output, protocol.path)
    record = {"declared": workload.declared, "kind": workload.kind,
              "output": workload.output or "labels or embeddings, as its infer() returns them"}
    if workload.kind == "classification":
        model = models.describe_model(model_path)
        return Described(workload, {
            "path": model.path, "revision": model.revision, "tokenizer_revision": model.tokenizer_revision,
            "labels": model.labels, "architecture": model.architecture,
            "sources": model.provenance.get("sources", []), "trained_on": model.provenance.get("tuning_corpus", {}),
        }, record, model.labels)
    labels = list(protocol.labels)
    if workload.kind == "generation":
        from gpucost_mlflow.execution.workloads import generation

        if variant.compile:
            raise GpucostError(f"variant '{variant.name}': compile is not available for workload generation "
                               "(generate() would run the uncompiled model under a compiled variant's name)")
        model, run = generation.describe(model_path, protocol.generation, labels)
        return Described(workload, model, {**record, **run}, labels)
    if workload.kind == "embeddings":
        from gpucost_mlflow.execution.workloads import embeddings

        info = embeddings.describe(model_path)
        return Described(workload, {
            "path": str(model_path.resolve()), "revision": info["revision"],
            "tokenizer_revision": info["tokenizer_revision"], "labels": labels, "architecture": info["architecture"],
            "sources": _packaged_sources(model_path), "trained_on": {},
        }, {**record, "pooling": info["pooling"]}, labels)
    return _describe_code(workload, variant, model_path, record, labels)


def _describe_code(workload: workloads.Workload, variant: Variant, model_path: Path, record: dict,
                   labels: list[str]) -> Described:
    """User code: its digest and the model folder it is given make the revision; the harness tokenizer comes from
    the folder (needed for length grouping and for the module's flops())."""
    from gpucost_mlflow.execution import models

    if not model_path.is_dir():
        raise GpucostError(f"{model_path}: model directory not found (a python: workload gets --model PATH as "
                           "settings['model_path'], and the harness tokenizer from it)")
    try:
        tokenizer = models.describe_tokenizer(model_path)
    except GpucostError:
        if variant.length_grouping == "sorted" or workload.declares_flops:
            raise GpucostError(f"{model_path}: no tokenizer files; {variant.name} needs the harness tokenizer "
                               "(length grouping or the module's flops() count its tokens)") from None
        tokenizer = {"revision": "", "files": []}
    folder = sha256_files(model_path, [f for f in directory_files(model_path) if f not in tokenizer["files"]])
    code = workload.code_digest()
    revision = hashlib.sha256(f"code {code}\nmodel {folder}\n".encode()).hexdigest()
    return Described(workload, {
        "path": str(model_path.resolve()), "revision": revision, "tokenizer_revision": tokenizer["revision"],
        "labels": labels, "architecture": workload.declared, "sources": [], "trained_on": {},
        "folder_revision": folder,
    }, {**record, "code": workload.module or workload.source, "code_sha256": code,
        "declares_flops": workload.declares_flops}, labels)


def _packaged_sources(model_path: Path) -> list[dict]:
    """The package records of the all-MiniLM-L6-v2 files when the encoder is that packaged folder."""
    from gpucost_mlflow.prepare import base_model_dir, model_sources

    try:
        packaged = base_model_dir().resolve() == model_path.resolve()
    except GpucostError:
        return []
    return model_sources() if packaged else []
