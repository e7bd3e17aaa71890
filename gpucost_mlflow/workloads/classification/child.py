"""The built-in classifier in the pass's child: its tokenizer and model loaded for the variant's settings, and the
its batches (batches.py), its FLOP count and predictions export (records.py) handed over
as its `Work`."""

from __future__ import annotations

from pathlib import Path

from gpucost_mlflow.core.judging.verdicts import PREDICTIONS
from gpucost_mlflow.core.kinds.base import Work


def load(spec, device) -> Work:
    """The classifier of spec.model_path at the variant's precision, quantization, attention and compile, its
    process under the variant's sdpa_backend (execution/attention.py)."""
    from gpucost_mlflow.execution import attention, models  # torch: deferred, so the registry's import stays light
    from gpucost_mlflow.workloads.classification import batches, records  # torch, as models
    from gpucost_mlflow.workloads.classification import model as classifier_model  # torch, as models

    settings = spec.settings
    tokenizer = models.load_tokenizer(Path(spec.model_path))
    model = classifier_model.load_classifier(
        Path(spec.model_path), device, settings.precision, settings.quantization,
        settings.attention, settings.compile,
    )
    label_names = [model.config.id2label[i] for i in range(model.config.num_labels)]
    return attention.observed(Work(
        tokenizer, model, batches.process,
        lambda predictions, pass_s: records.utilisation(model.config.to_dict(), settings, device, predictions, pass_s),
        lambda folder, predictions, duplicate_at: records.write_predictions(folder / PREDICTIONS, predictions,
                                                                            label_names, duplicate_at),
        empty=batches.Predictions,
    ), settings, device)


def preload() -> None:
    """What the fork server imports once for this kind (execution/forkserver.py): the classifier's model classes,
    which transformers loads lazily, in seconds."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer  # noqa: F401 - lazy modules
    from transformers.models.bert import modeling_bert  # noqa: F401 - loaded lazily by from_pretrained

    from gpucost_mlflow.workloads.classification import batches, model  # noqa: F401 - torch: imported here, once
