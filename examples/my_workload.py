"""Your own inference code under gpucost: a small rule-based classifier of film-review snippets.

Declare it on a variant with `workload: python:PATH` (a path read from the variants file's folder,
or an importable module name) and gpucost runs it as it runs its built-in classifier: the same ids,
batching order, warm-up, measured clock with device synchronisation, memory peaks, child process,
failures kept as rows, export and verdicts (docs/workloads.md).

Two functions are required:

- load(settings, device) is called once, before the clock (its time counts in load_s). `settings`
  holds the variant's settings plus `model_path` (the folder given with --model); `device` is
  "cpu" or "cuda". Whatever it returns is handed back to infer.
- infer(state, texts) is called once per batch, inside the clock: one output per text, in order.
  A classification output is a dict with `label` (one of the protocol's labels) and optionally a
  numeric `score`; an embedding is a list of numbers. Outputs must be plain JSON values.

An optional flops(batch_token_counts) returns the forward FLOPs of the batches (lists of token
counts per input, from the harness tokenizer); without it FLOPs and MFU stay empty with the reason
"FLOPs unknown for user code". This classifier does no matrix multiplies, so it declares none.
"""

from __future__ import annotations

import re

POSITIVE = frozenset({
    "best", "brilliant", "charming", "delight", "delightful", "engaging", "enjoy", "enjoyable", "excellent",
    "fascinating", "fine", "fun", "funny", "gorgeous", "great", "heartfelt", "hilarious", "lovely",
    "masterpiece", "memorable", "moving", "perfect", "pleasure", "powerful", "rare", "remarkable", "rewarding",
    "satisfying", "smart", "solid", "stunning", "superb", "sweet", "terrific", "touching", "treat", "triumph",
    "warm", "well", "wonderful", "worth",
})
NEGATIVE = frozenset({
    "annoying", "awful", "bad", "bland", "bore", "bored", "boring", "clumsy", "dreadful", "dull", "empty",
    "fails", "flat", "forgettable", "generic", "lame", "lazy", "mediocre", "mess", "pointless", "poor",
    "predictable", "silly", "sloppy", "stupid", "tedious", "tired", "unfunny", "waste", "weak", "worse",
    "worst",
})
WORD = re.compile(r"[a-z']+")


def load(settings: dict, device: str) -> dict:
    """Build what infer needs once, before the clock: here, the two word lists."""
    return {"positive": POSITIVE, "negative": NEGATIVE}


def infer(state: dict, texts: list[str]) -> list[dict]:
    """One label per text: fresh or rotten by the evaluative words it uses, plot when it uses none."""
    outputs = []
    for text in texts:
        words = WORD.findall(text.lower())
        positive = sum(word in state["positive"] for word in words)
        negative = sum(word in state["negative"] for word in words)
        if positive == negative == 0:
            outputs.append({"label": "plot", "score": 0.5})
            continue
        label = "fresh" if positive >= negative else "rotten"
        outputs.append({"label": label, "score": round(max(positive, negative) / (positive + negative), 4)})
    return outputs
