"""The MLflow names gpucost makes at run time, beside the fixed ones of tracking/schema.py (which re-exports these):
a candidate's metric part, a money metric's currency, and the params of the attention kernel a pass's child saw."""

from __future__ import annotations

import re

# The attention kernel the pass's child saw (execution/attention.py), logged as params when the pass ends:
# stack.sdpa.backend, .kernel, .pinned, .attn_implementation, .num_key_value_heads, .enabled, .cudnn_env, .note
SDPA_PREFIX = "stack.sdpa."


def metric_parts(texts: list[str]) -> dict[str, str]:
    """Each text as a metric name's last part MLflow accepts (letters, digits, _ - . and spaces on every platform):
    every other run of characters ('[', ',', '+', '(' in a configuration's name) becomes one '_'; texts that would
    then read alike get ' 2', ' 3' after the first, so no two candidates share a metric."""
    found: dict[str, str] = {}
    taken: set[str] = set()
    for text in texts:
        part = re.sub(r"[^\w.\- ]+", "_", text).strip() or "_"
        part = "_" if part in (".", "..") else part
        candidate, number = part, 1
        while candidate in taken:
            number += 1
            candidate = f"{part} {number}"
        taken.add(candidate)
        found[text] = candidate
    return found


def in_currency(metric: str, currency: str) -> str:
    """A money metric's name with its currency code, so the UI shows the unit: committed_cost_usd."""
    return f"{metric}_{currency.lower()}"


SDPA_PARAMS = ("backend", "kernel", "pinned", "attn_implementation", "num_key_value_heads")
SDPA_NOTE_CHARS = 1000


def observed_stack_params(stack: dict) -> dict[str, str]:
    """The params of what a pass's child saw of the stack (`stack.sdpa.<key>`): the attention kernel's names, torch's
    enabled SDPA flags as one list, the TORCH_CUDNN_SDPA_* variables as NAME=value pairs, the note where there is one;
    none where the child saw nothing."""
    sdpa = stack.get("sdpa") or {}
    if not sdpa:
        return {}
    params = {f"{SDPA_PREFIX}{key}": "" if sdpa.get(key) is None else str(sdpa[key]) for key in SDPA_PARAMS}
    params[f"{SDPA_PREFIX}enabled"] = ", ".join(name for name, on in sdpa.get("enabled", {}).items() if on) or "none"
    params[f"{SDPA_PREFIX}cudnn_env"] = "; ".join(f"{key}={value}" for key, value in sdpa.get("cudnn_env", {}).items())
    if sdpa.get("note"):
        params[f"{SDPA_PREFIX}note"] = sdpa["note"][:SDPA_NOTE_CHARS]
    return params
