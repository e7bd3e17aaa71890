"""The harness's batching order, the same for every workload: corpus order, or sorted by token length."""

from __future__ import annotations


def batches(lengths: list[int], batch_size: int, grouping: str) -> list[list[int]]:
    """Index batches: corpus order, or sorted by token length (stable) for length grouping."""
    order = list(range(len(lengths)))
    if grouping == "sorted":
        order.sort(key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def tokenized(tokenizer, texts: list[str], settings: dict) -> tuple[list[list[int]], list[int], list[list[int]], int]:
    """Every text's token ids (truncated at max_length, no padding yet), their lengths, the batch plan, the pad id."""
    encoded = tokenizer(
        texts, truncation=True, max_length=settings["max_length"], return_attention_mask=False, return_token_type_ids=False
    )["input_ids"]
    lengths = [len(seq) for seq in encoded]
    return encoded, lengths, batches(lengths, settings["batch_size"], settings["length_grouping"]), tokenizer.pad_token_id or 0


def padded(batch: list[int], encoded: list[list[int]], lengths: list[int], pad_id: int):
    """One batch padded to its longest input, on the host: (input ids, attention mask) as int64 arrays."""
    import numpy as np

    width = max(lengths[i] for i in batch)
    input_ids = np.full((len(batch), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, index in enumerate(batch):
        input_ids[row, : lengths[index]] = encoded[index]
        mask[row, : lengths[index]] = 1
    return input_ids, mask
