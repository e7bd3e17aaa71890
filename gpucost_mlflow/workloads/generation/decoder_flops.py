"""Forward FLOPs of greedy generation with a decoder-only model and its KV cache: prefill, then decode.

Counted as in core/measurement/flops.py: every matrix multiply, 2 x multiply-accumulates; norms, rotary embeddings,
activations, residual adds, the embedding lookup and the argmax are left out. Per layer and per token
the projections Q and O (2 h q each, q = heads x head_dim), K and V (2 h kv each, kv = kv_heads x
head_dim) and the gated feed-forward (gate, up, down: 6 h i); per layer, attention scores and context
(4 L_q L_k q). The LM head (2 h vocab) runs once per new token: on the last prompt position at prefill,
on the fed-back token at each decode step.

Prefill processes the prompt once and gives the first new token. Each later new token costs one decode
step: one token per row, attending over the cache (prompt plus the tokens fed back so far). A batch runs
as many steps as its longest answer needs; a row that stopped at its end-of-sequence token is still
computed until then.

*Useful* FLOPs are what each row needs on its own: its real prompt, causal attention (a prompt of L tokens
makes L(L+1)/2 query-key pairs), and decode steps only until its own last new token. *Padded* FLOPs are
what the batch makes the device compute: every row at the batch's padded prompt width W with the full
W x W masked attention (the mask hides padded keys and future positions but does not skip them), and
every row through every decode step of the batch, attending over W plus the steps so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.measurement.flops import FlopCount

FIELDS = ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads", "vocab_size")


@dataclass(frozen=True)
class DecoderShape:
    """The sizes that set a decoder-only model's matrix multiplies (LLaMA-style: gated feed-forward, grouped KV)."""

    hidden: int
    layers: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int


def decoder_shape(config: dict) -> DecoderShape:
    """The shape from a transformers config dict (LLaMA, Mistral, Qwen2, SmolLM, ...); one-line error otherwise."""
    missing = [key for key in FIELDS if not isinstance(config.get(key), int)]
    if missing:
        raise GpucostError(f"model config lacks {', '.join(missing)}: FLOPs are counted for decoder-only models "
                           "with a gated feed-forward")
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return DecoderShape(config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"], heads,
                        int(kv_heads), int(head_dim), config["vocab_size"])


def per_token(shape: DecoderShape) -> int:
    """Projections and feed-forward of all layers for one token (the LM head apart)."""
    h, q, kv = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    return shape.layers * (2 * h * q + 4 * h * kv + 2 * q * h + 6 * h * shape.intermediate)


def lm_head(shape: DecoderShape) -> int:
    return 2 * shape.hidden * shape.vocab


def attention(shape: DecoderShape, pairs: int) -> int:
    """Scores and context over this many query-key pairs, all layers and heads."""
    return shape.layers * 4 * pairs * shape.heads * shape.head_dim


def prefill(shape: DecoderShape, tokens: int, causal: bool) -> int:
    """One row's prompt of `tokens` positions: causal pairs only (useful) or the full square (padded)."""
    pairs = tokens * (tokens + 1) // 2 if causal else tokens * tokens
    return tokens * per_token(shape) + attention(shape, pairs) + lm_head(shape)


def decode(shape: DecoderShape, context: int, steps: int) -> int:
    """One row's decode steps: step k feeds one token back and attends over context + k cached positions."""
    pairs = steps * context + steps * (steps + 1) // 2
    return steps * (per_token(shape) + lm_head(shape)) + attention(shape, pairs)


@dataclass(frozen=True)
class GenerationFlops:
    """Useful and padded FLOPs of a generation pass, prefill and decode apart, with the token counts behind them."""

    prefill_useful: int
    prefill_padded: int
    decode_useful: int
    decode_padded: int
    real_tokens: int  # prompt tokens plus the new tokens fed back, per row until its own last one
    padded_tokens: int  # what the batches computed: W per row at prefill, one per row per decode step
    sequences: int
    batches: int

    def total(self) -> FlopCount:
        """The pass's totals in the shape core/measurement/flops.py rates (useful_flop_per_s, MFU)."""
        return FlopCount(self.prefill_useful + self.decode_useful, self.prefill_padded + self.decode_padded,
                         self.real_tokens, self.padded_tokens, self.sequences, self.batches)

    def metrics(self) -> dict[str, float]:
        return {"flops_prefill_useful": float(self.prefill_useful), "flops_prefill_padded": float(self.prefill_padded),
                "flops_decode_useful": float(self.decode_useful), "flops_decode_padded": float(self.decode_padded)}


def count(shape: DecoderShape, batches: Iterable[tuple[Sequence[int], Sequence[int]]]) -> GenerationFlops:
    """FLOPs of a pass from each completed batch's real prompt lengths and its rows' new-token counts (the
    end-of-sequence token included, padding after it not)."""
    totals = [0] * 6
    sequences = number = 0
    for prompts, answers in batches:
        if not prompts:
            continue
        width, steps = max(prompts), max(answers) if answers else 0
        number += 1
        sequences += len(prompts)
        for length, new in zip(prompts, answers):
            fed = max(new - 1, 0)
            totals[0] += prefill(shape, length, causal=True)
            totals[1] += prefill(shape, width, causal=False)
            totals[2] += decode(shape, length, fed)
            totals[3] += decode(shape, width, max(steps - 1, 0))
            totals[4] += length + fed
            totals[5] += width + max(steps - 1, 0)
    return GenerationFlops(*totals[:4], totals[4], totals[5], sequences, number)
