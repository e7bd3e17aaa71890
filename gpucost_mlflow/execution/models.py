"""Loading a classifier directory as a variant asks: device, precision, quantization, attention, compile."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.fingerprints import directory_files, sha256_files

TOKENIZER_FILES = {
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
    "merges.txt",
    "vocab.json",
    "sentencepiece.bpe.model",
    "spiece.model",
    "added_tokens.json",
}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class ModelInfo:
    """What the manifest records of a classifier directory."""

    path: str
    revision: str
    tokenizer_revision: str
    labels: list[str]
    architecture: str
    provenance: dict


def read_folder(path: Path, missing: str) -> tuple[dict, dict]:
    """A transformers folder's config and what the manifest records of it: content hashes of the weights and of the
    tokenizer apart, and the architecture. Checked before any run starts; `missing` says what to do when it is
    absent."""
    if not path.is_dir():
        raise GpucostError(f"{path}: {missing}")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise GpucostError(f"{path}: no readable config.json, not a transformers model directory") from None
    tokenizer = describe_tokenizer(path)
    files = [name for name in directory_files(path) if name not in tokenizer["files"]]
    return config, {"revision": sha256_files(path, files), "tokenizer_revision": tokenizer["revision"],
                    "architecture": ",".join(config.get("architectures") or [])}


def describe_model(path: Path) -> ModelInfo:
    """Revisions (content hashes) and labels of a classifier directory, checked before any run starts."""
    config, described = read_folder(path, "model directory not found (run `gpucost model prepare` or pass -P "
                                          "model=PATH)")
    id2label = config.get("id2label") or {}
    labels = [id2label[key] for key in sorted(id2label, key=int)]
    if not labels:
        raise GpucostError(f"{path}: config.json has no id2label, not a sequence classifier")
    provenance_path = path / "gpucost_model.json"
    provenance = json.loads(provenance_path.read_text(encoding="utf-8")) if provenance_path.exists() else {}
    return ModelInfo(path=str(path.resolve()), labels=labels, provenance=provenance, **described)


def resolve_device(choice: str) -> torch.device:
    """`auto` takes the GPU when torch sees one (CUDA or ROCm), else the CPU."""
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        raise GpucostError("variant asks for device cuda but torch sees no GPU")
    return torch.device(choice)


def load_tokenizer(path: Path):
    """The directory's fast tokenizer, from local files only."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    return AutoTokenizer.from_pretrained(str(path), local_files_only=True, use_fast=True)


def load_encoder(path: Path, device: torch.device, precision: str, quantization: str, attention: str, compile_: bool):
    """The bare encoder (no task head: its hidden states are pooled into embeddings) (load_auto)."""
    from transformers import AutoModel

    return load_auto(AutoModel, path, device, precision, quantization, attention, compile_)


def load_causal_lm(path: Path, device: torch.device, precision: str, quantization: str, attention: str, compile_: bool):
    """A causal language model for generation (load_auto)."""
    from transformers import AutoModelForCausalLM

    return load_auto(AutoModelForCausalLM, path, device, precision, quantization, attention, compile_)


def load_auto(auto_class, path: Path, device: torch.device, precision: str, quantization: str, attention: str,
              compile_: bool):
    """A transformers model of `auto_class` (its kind's: a classifier, an encoder, a causal LM) in eval mode on its
    device, with the variant's precision, quantization, attention and compile."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    model = auto_class.from_pretrained(
        str(path), local_files_only=True, attn_implementation=attention, dtype=DTYPES[precision]
    )
    model.eval()
    if quantization == "dynamic-int8":
        if device.type != "cpu":
            raise GpucostError("dynamic-int8 quantization runs on the CPU only")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    model.to(device)
    if compile_:
        model = torch.compile(model)
    return model


def describe_tokenizer(path: Path) -> dict:
    """The tokenizer revision: content hash of the tokenizer files in a directory."""
    files = [f for f in directory_files(path) if f in TOKENIZER_FILES]
    if not files:
        raise GpucostError(f"{path}: no tokenizer files")
    return {"revision": sha256_files(path, files), "files": files}
