"""The classifier's model: loaded for a pass at the variant's settings, or on the CPU for a quick labelling."""

from __future__ import annotations

from pathlib import Path

import torch

from gpucost_mlflow.execution import models


def load_classifier(path: Path, device: torch.device, precision: str, quantization: str, attention: str,
                    compile_: bool):
    """The classifier in eval mode on its device, with the variant's precision and quantization."""
    from transformers import AutoModelForSequenceClassification

    return models.load_auto(AutoModelForSequenceClassification, path, device, precision, quantization, attention,
                            compile_)


def predict_labels(path: Path, texts: list[str], batch_size: int = 32, max_length: int = 256) -> list[str]:
    """Labels for texts, length-sorted batches on the CPU: a quick evaluation, not a timed pass."""
    tokenizer = models.load_tokenizer(path)
    model = load_classifier(path, torch.device("cpu"), "fp32", "none", "sdpa", False)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    labels: list[str] = [""] * len(texts)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            encoded = tokenizer(
                [texts[i] for i in batch], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
            )
            for index, label in zip(batch, model(**encoded).logits.argmax(dim=-1).tolist()):
                labels[index] = model.config.id2label[label]
    return labels
