"""The classifier's batches inside the measured clock: tokenize, pad each batch to its longest input, transfer,
infer, bring labels and scores to the host; what they deliver (`Predictions`) and the batches' real shapes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from gpucost_mlflow.execution.batching import each_batch, padded, shapes, tokenized


@dataclass
class Predictions:
    """Ids with predicted label index and score, in processing order, on the host."""

    ids: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    shapes: Shapes | None = None

    def batch_lengths(self) -> list[list[int]]:
        """Real token counts per completed batch, in processing order (for the FLOP count, after the clock)."""
        return self.shapes.batch_lengths() if self.shapes else []


def process(ids, texts, tokenizer, model, settings, device, on_batch: Callable[..., None] | None = None) -> Predictions:
    """Tokenize, pad each batch to its longest input, transfer, infer, bring labels and scores to the host.

    On an exception it raises PassFailure carrying the predictions made so far.
    """
    encoded, lengths, plan, pad_id = tokenized(tokenizer, texts, settings)
    done_labels, done_scores, done_order = [], [], []

    def step(batch: list[int]) -> None:
        input_ids, mask = padded(batch, encoded, lengths, pad_id, settings)
        logits = model(
            input_ids=torch.from_numpy(input_ids).to(device, non_blocking=True),
            attention_mask=torch.from_numpy(mask).to(device, non_blocking=True),
        ).logits
        score, label = logits.float().softmax(dim=-1).max(dim=-1)
        done_labels.append(label)
        done_scores.append(score)
        done_order.extend(batch)

    def outputs(failed: bool) -> Predictions:
        # After a failure the finished batches are copied to the host one by one: no new device allocation on a
        # device that just ran out of memory.
        order = done_order[: sum(len(t) for t in done_labels)] if failed else done_order
        return _to_host(ids, order, done_labels, done_scores, lengths, plan, each_first=failed)

    with torch.inference_mode():
        return each_batch(plan, on_batch, step, outputs, shapes(lengths, settings))


def _to_host(ids, order, labels, scores, lengths, plan, each_first: bool = False) -> Predictions:
    """The finished batches' labels and scores on the host, in processing order (each tensor copied apart after a
    failure: no new device allocation on a device that just ran out of memory)."""
    if not labels:
        return Predictions()
    if each_first:
        labels, scores = [t.cpu() for t in labels], [t.cpu() for t in scores]
    label_list = torch.cat(labels).cpu().tolist()
    score_list = torch.cat(scores).cpu().tolist()
    return Predictions([ids[i] for i in order], label_list, score_list, Shapes(lengths, plan[: len(labels)]))


@dataclass
class Shapes:
    """The real token count of every input and the batches that completed: read after the clock stops."""

    lengths: list[int]
    plan: list[list[int]]

    def batch_lengths(self) -> list[list[int]]:
        return [[self.lengths[i] for i in batch] for batch in self.plan]
