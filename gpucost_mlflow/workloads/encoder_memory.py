"""Memory estimate for inference of a BERT-style encoder (the classifier's, the embedder's): every part labelled an
estimate, with its formula (`gpucost memory estimate`).

It never claims throughput, interconnect or automatic splitting over GPUs, and never replaces
measuring the model (`gpucost memory measure`).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}
ALLOCATOR_MARGIN = 0.20  # caching-allocator rounding and fragmentation, on top of allocated bytes
TOO_CLOSE = 0.15  # within 15 % of the device's memory the estimate cannot tell
EMBEDDING_TABLE = "embedding"  # a weight whose name holds it is a lookup table (word, position), not a matmul


@dataclass(frozen=True)
class Part:
    name: str
    bytes: float
    formula: str


@dataclass(frozen=True)
class Estimate:
    parts: tuple[Part, ...]
    total_bytes: float
    verdict: str


def safetensors_parameters(model_dir: Path) -> tuple[int, int]:
    """(all parameters, parameters in 2-D weight matrices of the encoder layers) from the safetensors headers."""
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise GpucostError(f"{model_dir}: no .safetensors weights to count parameters from")
    total = linear = 0
    for path in files:
        with open(path, "rb") as handle:
            size = struct.unpack("<Q", handle.read(8))[0]
            header = json.loads(handle.read(size))
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            count = math.prod(entry["shape"])
            total += count
            if len(entry["shape"]) == 2 and EMBEDDING_TABLE not in name:
                linear += count
    return total, linear


def estimate(config: dict, parameters: int, linear_parameters: int, *, precision: str, batch: int,
             max_length: int, device_memory_gib: float | None = None) -> Estimate:
    """Parameters x bytes, one layer's activations including attention scores, the allocator's margin."""
    if precision not in BYTES:
        raise GpucostError(f"precision '{precision}' unknown; choose one of {', '.join(BYTES)}")
    if batch < 1 or max_length < 1:
        raise GpucostError("--batch and --max-length must be positive whole numbers")
    h = config["hidden_size"]
    heads = config["num_attention_heads"]
    inter = config["intermediate_size"]
    e = BYTES[precision]
    b, L = batch, max_length
    if precision == "int8":
        weights = Part("weights (estimate)", linear_parameters * 1 + (parameters - linear_parameters) * 4,
                       f"{linear_parameters:,} linear weights x 1 B (dynamic int8) + "
                       f"{parameters - linear_parameters:,} others x 4 B")
        e = 4  # dynamic quantization computes activations in fp32
    else:
        weights = Part("weights (estimate)", parameters * e, f"{parameters:,} parameters x {e} B ({precision})")
    hidden = Part("hidden states in and out of a layer (estimate)", 2 * b * L * h * e,
                  f"2 x batch {b} x length {L} x hidden {h} x {e} B")
    qkv = Part("query, key, value (estimate)", 3 * b * L * h * e, f"3 x {b} x {L} x {h} x {e} B")
    scores = Part("attention scores and probabilities (estimate)", 2 * b * heads * L * L * e,
                  f"2 x batch {b} x heads {heads} x length {L} x length {L} x {e} B")
    ffn = Part("feed-forward intermediate (estimate)", b * L * inter * e, f"{b} x {L} x intermediate {inter} x {e} B")
    allocated = sum(p.bytes for p in (weights, hidden, qkv, scores, ffn))
    margin = Part("caching-allocator margin (estimate)", allocated * ALLOCATOR_MARGIN,
                  f"{int(ALLOCATOR_MARGIN * 100)} % of the above (reserved beyond allocated)")
    parts = (weights, hidden, qkv, scores, ffn, margin)
    total = allocated + margin.bytes
    verdict = "no device memory given"
    if device_memory_gib is not None:
        capacity = device_memory_gib * 2**30
        if abs(total - capacity) <= TOO_CLOSE * capacity:
            verdict = f"too close to say ({total / 2**30:.2f} GiB estimated for {device_memory_gib:g} GiB): measure it"
        elif total < capacity:
            verdict = f"fits ({total / 2**30:.2f} GiB estimated of {device_memory_gib:g} GiB)"
        else:
            verdict = f"does not fit ({total / 2**30:.2f} GiB estimated, {device_memory_gib:g} GiB available)"
    return Estimate(parts, total, verdict)
