"""The harness's batching, the same for every workload and engine: the order (corpus order, or sorted by token
length), the padding (to each batch's longest input, or up to the variant's pad_to_multiple_of), the shape of each
batch (its inputs and padded length: what a kernel that plans per shape sees), and the loop over the batches with its
progress and its failure kept as a row."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence

from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.execution.outcome import PassFailure


def batches(lengths: list[int], batch_size: int, grouping: str) -> list[list[int]]:
    """Index batches: corpus order, or sorted by token length (stable) for length grouping."""
    order = list(range(len(lengths)))
    if grouping == "sorted":
        order.sort(key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def tokenized(tokenizer, texts: list[str],
              settings: Settings) -> tuple[list[list[int]], list[int], list[list[int]], int]:
    """Every text's token ids (truncated at max_length, no padding yet), their lengths, the batch plan, the pad id."""
    encoded = tokenizer(
        texts, truncation=True, max_length=settings.max_length, return_attention_mask=False, return_token_type_ids=False
    )["input_ids"]
    lengths = [len(seq) for seq in encoded]
    planned = batches(lengths, settings.batch_size, settings.length_grouping)
    return encoded, lengths, planned, tokenizer.pad_token_id or 0


Shape = tuple[int, int]  # a batch's inputs and padded length in tokens


def width(lengths: Sequence[int], settings: Settings | None = None) -> int:
    """The padded length of a batch of inputs of these token counts: its longest, rounded up to the variant's
    pad_to_multiple_of, never past its max_length (the tokenizer's own rule for that argument)."""
    longest = max(lengths)
    multiple = settings.pad_to_multiple_of if settings is not None else 0
    if not multiple:
        return longest
    return max(longest, min(-(-longest // multiple) * multiple, settings.max_length))


def shapes(lengths: list[int], settings: Settings | None = None) -> Callable[[list[int]], Shape]:
    """The shape of each batch of these inputs, as `padded` pads it: (inputs, padded length)."""
    return lambda batch: (len(batch), width([lengths[i] for i in batch], settings))


def padded(batch: list[int], encoded: list[list[int]], lengths: list[int], pad_id: int,
           settings: Settings | None = None):
    """One batch padded to its longest input (or up to the variant's pad_to_multiple_of), on the host: (input ids,
    attention mask) as int64 arrays."""
    import numpy as np

    wide = width([lengths[i] for i in batch], settings)
    input_ids = np.full((len(batch), wide), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), wide), dtype=np.int64)
    for row, index in enumerate(batch):
        input_ids[row, : lengths[index]] = encoded[index]
        mask[row, : lengths[index]] = 1
    return input_ids, mask


def each_batch(plan: list[list[int]], on_batch: Callable[..., None] | None,
               step: Callable[[list[int]], None], outputs: Callable[[bool], object],
               shape: Callable[[list[int]], Shape] | None = None) -> object:
    """Run `step(batch)` on every batch of the plan, telling `on_batch(number, inputs done before it)` first, and its
    shape where the kind knows it (`shape`: `on_batch(number, done, shape)`); return `outputs(False)`. On an exception
    the traceback's frames are cleared (a device that ran out of memory gets the failed batch's tensors back) and
    PassFailure carries `outputs(True)`: the finished batches' outputs."""
    done = 0
    try:
        for number, batch in enumerate(plan, start=1):
            if on_batch is not None:
                if shape is not None:
                    on_batch(number, done, shape(batch))
                else:
                    on_batch(number, done)
            step(batch)
            done += len(batch)
        return outputs(False)
    except BaseException as exc:
        traceback.clear_frames(exc.__traceback__)
        raise PassFailure(exc, outputs(True)) from exc
