"""User code (`workload: python:PATH_OR_MODULE`), as the launcher describes it: its module file with the model folder
its load() is given."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.fingerprints import directory_files, sha256_files
from gpucost_mlflow.core.kinds.base import Described
from gpucost_mlflow.workloads.user_code.workload import Workload


def default_model(root: Path) -> Path:
    """User code has no model of its own: `--model auto` takes the one of the output its protocol judges."""
    raise GpucostError("a python: workload has no default model; pass --model PATH (given to its load() as "
                       "settings['model_path'])")


def describe(workload, variant, model_path: Path, protocol, record) -> Described:
    """Its digest and the model folder it is given make the revision; the harness tokenizer comes from the folder
    (needed for length grouping and for the module's flops())."""
    from gpucost_mlflow.execution import models  # deferred: imports torch

    labels = list(protocol.labels)
    if not model_path.is_dir():
        raise GpucostError(f"{model_path}: model directory not found (a python: workload gets --model PATH as "
                           "settings['model_path'], and the harness tokenizer from it)")
    try:
        tokenizer = models.describe_tokenizer(model_path)
    except GpucostError:
        if variant.settings.length_grouping == "sorted" or workload.declares_flops:
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
    }, record.extended(Workload, code=workload.module or workload.source, code_sha256=code,
                       declares_flops=workload.declares_flops), labels)
