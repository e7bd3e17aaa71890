"""Forward-pass FLOPs of a BERT-style encoder (the classifier; the embedder without its head) from its config and
the real token counts.

Counted: every matrix multiply, as 2 x multiply-accumulates. Per layer and per token: Q, K, V and
output projections (8 h^2) and the feed-forward pair (4 h i); per layer and per sequence, the
attention scores Q K^T and the context A V (2 x 2 L_q L_k h, all heads together). Once per sequence:
the pooler on the first token (2 h^2; RoBERTa's dense head layer costs the same) and the
classifier (2 h labels). Left out, because they are not matrix multiplies
and weigh well under 1 % here: softmax, layer norms, GELU, residual adds, bias adds, the attention mask,
the embedding lookups and the final softmax / argmax.

Padding is counted apart: *useful* FLOPs are those a sequence needs at its own length; *padded*
FLOPs are what the batch makes the device compute, every row at the batch's padded width (the
attention mask hides padded keys but does not skip them). Rated as every kind's count is
(core/measurement/flops.py). Shared by the classifier and the embedder; plain Python on plain data, no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.measurement.flops import FlopCount

FIELDS = ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads")


@dataclass(frozen=True)
class EncoderShape:
    """The sizes that set a BERT-style encoder's matrix multiplies."""

    hidden: int
    layers: int
    intermediate: int
    heads: int
    labels: int


def encoder_shape(config: dict) -> EncoderShape:
    """The shape from a transformers config dict (BERT, MiniLM, RoBERTa, ...); one-line error otherwise."""
    missing = [key for key in FIELDS if not isinstance(config.get(key), int)]
    if missing:
        raise GpucostError(f"model config lacks {', '.join(missing)}: FLOPs are counted for BERT-style encoders only")
    labels = config.get("num_labels") or len(config.get("id2label") or {}) or 2
    return EncoderShape(config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"],
                        config["num_attention_heads"], int(labels))


def per_token_flops(shape: EncoderShape) -> int:
    """The length-independent part: projections and feed-forward, all layers, for one token."""
    h, i = shape.hidden, shape.intermediate
    return shape.layers * (8 * h * h + 4 * h * i)


def sequence_flops(shape: EncoderShape, tokens: int, attended: int | None = None) -> int:
    """One sequence of `tokens` query positions attending over `attended` key positions (default: itself)."""
    keys = tokens if attended is None else attended
    attention = shape.layers * 4 * tokens * keys * shape.hidden
    head = 2 * shape.hidden * shape.hidden + 2 * shape.hidden * shape.labels
    return tokens * per_token_flops(shape) + attention + head


def count(shape: EncoderShape, batches: Iterable[Sequence[int]],
          width: Callable[[Sequence[int]], int] = max) -> FlopCount:
    """FLOPs of a pass whose batches hold sequences of these real token counts, each padded to `width` of them (its
    longest, or up to the variant's pad_to_multiple_of: execution/batching.py `width`)."""
    useful = padded = real = padded_tokens = sequences = number = 0
    for lengths in batches:
        if not lengths:
            continue
        wide = width(lengths)
        number += 1
        sequences += len(lengths)
        real += sum(lengths)
        padded_tokens += wide * len(lengths)
        useful += sum(sequence_flops(shape, length) for length in lengths)
        padded += len(lengths) * sequence_flops(shape, wide)
    return FlopCount(useful, padded, real, padded_tokens, sequences, number)
