"""Built-in sentence embeddings on ONNX Runtime: the same tokenizer, batches, mean pooling (in float32, normalised
when the folder says so), FLOP count and export as on torch (child.py), the encoder run by an ORT session."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.execution.batching import each_batch, padded, shapes, tokenized
from gpucost_mlflow.workloads import engine_cache, ort
from gpucost_mlflow.workloads.embeddings import child

OUTPUT = "last_hidden_state"


def options(settings: Settings, device_type: str) -> ort.OrtOptions:
    """What its export depends on (workloads/ort.py)."""
    return ort.options(settings, device_type, OUTPUT)


def load(spec, device) -> Work:
    """The encoder exported (or read from the engine cache) and its session."""
    import torch

    from gpucost_mlflow.execution import models  # deferred: imports torch

    record, settings, path = spec.workload.engine, spec.settings, Path(spec.model_path)
    encoder = models.load_encoder(path, torch.device("cpu"), "fp32", "none", "sdpa", False)
    config = encoder.config.to_dict()
    onnx_file, convert_s = ort.exported(encoder, record, OUTPUT)
    del encoder
    session = ort.session(onnx_file, ort.OrtOptions.from_record(record.options).provider)
    return Work(models.load_tokenizer(path), session, partial(process, normalize=child.pooling(path)["normalize"]),
                partial(_utilisation, config, settings, device, convert_s), child.export, memory=ort.memory,
                empty=child.Embedded)


def process(ids, texts, tokenizer, session, settings, device, on_batch: Callable[..., None] | None = None, *,
            normalize: bool = True) -> child.Embedded:
    """Tokenize, pad, run the session, mean-pool over the real tokens (and normalise) in float32 on the host. On an
    exception it raises PassFailure carrying the embeddings made so far."""
    import numpy as np

    encoded, lengths, plan, pad_id = tokenized(tokenizer, texts, settings)
    done, order = [], []

    def step(batch: list[int]) -> None:
        input_ids, mask = padded(batch, encoded, lengths, pad_id, settings)
        hidden = session.run([OUTPUT], {"input_ids": input_ids, "attention_mask": mask})[0].astype(np.float32)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1.0, None)
        if normalize:
            pooled = pooled / np.clip(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12, None)
        done.append(pooled)
        order.extend(batch)

    return each_batch(plan, on_batch, step, lambda failed: _embedded(ids, order, done, lengths, plan),
                      shapes(lengths, settings))


def _embedded(ids, order, done, lengths, plan) -> child.Embedded:
    import numpy as np

    if not done:
        return child.Embedded()
    return child.Embedded([ids[i] for i in order], np.concatenate(done), lengths, plan[: len(done)])


def _utilisation(config: dict, settings: Settings, device, convert_s: float | None, outputs, pass_s) -> dict:
    """The encoder's FLOP count (the same arithmetic as on torch) and the export's seconds when it ran here."""
    return engine_cache.with_conversion(child.utilisation(config, settings, device, outputs, pass_s), convert_s)
