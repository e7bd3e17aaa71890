"""The built-in classifier on ONNX Runtime: the same tokenizer, batches, labels, FLOP count and predictions file as
on torch (execution/runner.py), the forward pass run by an optimised ORT session of the exported model."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from gpucost_mlflow.core.judging.verdicts import PREDICTIONS
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.execution.batching import each_batch, padded, shapes, tokenized
from gpucost_mlflow.workloads import engine_cache, ort
from gpucost_mlflow.workloads.classification import records

OUTPUT = "logits"


def options(settings: Settings, device_type: str) -> ort.OrtOptions:
    """What its export depends on (workloads/ort.py)."""
    return ort.options(settings, device_type, OUTPUT)


def load(spec, device) -> Work:
    """The classifier exported (or read from the engine cache) and its session; the export's seconds, when it ran,
    are part of the pass's load time and recorded apart as convert_s."""
    import torch

    from gpucost_mlflow.execution import models  # torch: deferred, as the kind's child
    from gpucost_mlflow.workloads.classification import batches, records  # torch, as models
    from gpucost_mlflow.workloads.classification import model as classifier_model  # torch, as models

    record, settings = spec.workload.engine, spec.settings
    torch_model = classifier_model.load_classifier(Path(spec.model_path), torch.device("cpu"), "fp32", "none", "sdpa",
                                                   False)
    config = torch_model.config.to_dict()
    label_names = [torch_model.config.id2label[i] for i in range(torch_model.config.num_labels)]
    path, convert_s = ort.exported(torch_model, record, OUTPUT)
    del torch_model
    session = ort.session(path, ort.OrtOptions.from_record(record.options).provider)
    return Work(
        models.load_tokenizer(Path(spec.model_path)), session, process,
        partial(_utilisation, config, settings, device, convert_s),
        lambda folder, predictions, duplicate_at: records.write_predictions(folder / PREDICTIONS, predictions,
                                                                           label_names, duplicate_at),
        memory=ort.memory,
        empty=batches.Predictions,
    )


def process(ids, texts, tokenizer, session, settings, device, on_batch: Callable[..., None] | None = None):
    """Tokenize, pad each batch to its longest input, run the session, take each input's most likely label and its
    probability. On an exception it raises PassFailure carrying the predictions made so far."""
    import numpy as np

    from gpucost_mlflow.workloads.classification.batches import Predictions, Shapes  # torch, as in load

    encoded, lengths, plan, pad_id = tokenized(tokenizer, texts, settings)
    labels, scores, order, finished = [], [], [], []

    def step(batch: list[int]) -> None:
        input_ids, mask = padded(batch, encoded, lengths, pad_id, settings)
        logits = session.run([OUTPUT], {"input_ids": input_ids, "attention_mask": mask})[0].astype(np.float32)
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities = shifted / shifted.sum(axis=-1, keepdims=True)
        labels.extend(int(i) for i in probabilities.argmax(axis=-1))
        scores.extend(float(p) for p in probabilities.max(axis=-1))
        order.extend(batch)
        finished.append(batch)

    return each_batch(plan, on_batch, step, lambda failed: Predictions([ids[i] for i in order], labels, scores,
                                                                      Shapes(lengths, finished)),
                      shapes(lengths, settings))


def _utilisation(config: dict, settings: Settings, device, convert_s: float | None, predictions, pass_s) -> dict:
    """The classifier's FLOP count (the same arithmetic as on torch) and the export's seconds when it ran here."""

    return engine_cache.with_conversion(records.utilisation(config, settings, device, predictions, pass_s), convert_s)
