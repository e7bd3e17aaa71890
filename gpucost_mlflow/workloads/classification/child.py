"""The built-in classifier in the pass's child: its tokenizer and model loaded for the variant's settings, and the
runner's classifier batches (execution/runner.py), its FLOP count and predictions export (records.py) handed over
as its `Work`."""

from __future__ import annotations

from pathlib import Path

from gpucost_mlflow.core.judging.verdicts import PREDICTIONS
from gpucost_mlflow.workloads.base import Work


def load(spec, device) -> Work:
    """The classifier of spec.model_path at the variant's precision, quantization, attention and compile."""
    from gpucost_mlflow.execution import models, runner
    from gpucost_mlflow.workloads.classification import records

    settings = spec.settings
    tokenizer = models.load_tokenizer(Path(spec.model_path))
    model = models.load_classifier(
        Path(spec.model_path), device, settings["precision"], settings["quantization"],
        settings["attention"], settings["compile"],
    )
    label_names = [model.config.id2label[i] for i in range(model.config.num_labels)]
    return Work(
        tokenizer, model, runner.process,
        lambda predictions, pass_s: records.utilisation(model.config.to_dict(), settings, device, predictions, pass_s),
        lambda folder, predictions, duplicate_at: records.write_predictions(folder / PREDICTIONS, predictions,
                                                                            label_names, duplicate_at),
    )
