"""What a generation pass is asked to do: the prompt template, the number of new tokens, how the answer is read.

The protocol's `generation:` section fixes the task before any timing, the same for every variant compared
(a different prompt or another number of new tokens is other work): the template with its `{text}`
placeholder, `max_new_tokens`, whether the model's chat template wraps the prompt, and whether the prompt
asks for one of the corpus labels (then the label read from each output is scored against the gold labels).
Decoding is always greedy with the KV cache on and left padding: deterministic, and the same for every
variant. Pure Python on plain data. The protocol's loader reaches it only through this output's rules
(`output.py`: `SECTION`, `SECTION_KEYS`, `task`), found by the registry: core/ never names a kind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.records import Record

TEXT = "{text}"
LABELS = "{labels}"
ANSWERS = ("label", "text")
KEYS = ("prompt", "max_new_tokens", "chat_template", "answer")
DECODING = {"decoding": "greedy (do_sample=False, num_beams=1)", "kv_cache": True, "padding_side": "left"}


@dataclass(frozen=True)
class GenerationSettings(Record):
    """The generation task as the protocol declares it."""

    prompt: str  # the template: {text} is the input text, {labels} the corpus labels joined by ", "
    max_new_tokens: int
    chat_template: bool  # wrap the rendered prompt as one user message with the model's chat template
    answer: str  # label: the output is read for one of the corpus labels; text: the output is the deliverable

    RENAMED: ClassVar[dict[str, str]] = {"prompt": "prompt_template"}

    def record(self) -> dict:
        """What the manifest and the child get: the template, the settings and the fixed decoding rules."""
        return {**super().record(), **DECODING}


def parse(section, where: str) -> GenerationSettings:
    """The `generation:` section checked: a template with {text}, max_new_tokens a whole number >= 1, the rest
    optional (chat_template false, answer text); every error is one line naming the field."""
    if not isinstance(section, dict):
        raise GpucostError(f"{where}: field 'generation' must be a mapping with prompt and max_new_tokens")
    unknown = sorted(set(map(str, section)) - set(KEYS))
    if unknown:
        raise GpucostError(f"{where}: field 'generation' has unknown key(s) {', '.join(unknown)} "
                           f"(allowed: {', '.join(KEYS)})")
    prompt = section.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise GpucostError(f"{where}: field 'generation.prompt' must be a non-empty template with {TEXT}")
    if TEXT not in prompt:
        raise GpucostError(f"{where}: field 'generation.prompt' has no {TEXT} placeholder: every prompt would be "
                           "the same, whatever the input")
    tokens = section.get("max_new_tokens")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise GpucostError(f"{where}: field 'generation.max_new_tokens' must be a whole number >= 1 "
                           f"(got {tokens!r})")
    chat = section.get("chat_template", False)
    if not isinstance(chat, bool):
        raise GpucostError(f"{where}: field 'generation.chat_template' must be true or false")
    answer = section.get("answer", "text")
    if answer not in ANSWERS:
        raise GpucostError(f"{where}: field 'generation.answer' must be one of {', '.join(ANSWERS)}")
    return GenerationSettings(prompt, tokens, chat, answer)


def render(template: str, text: str, labels: Sequence[str]) -> str:
    """The prompt for one input: only {text} and {labels} are replaced, any other brace is kept as written."""
    return template.replace(LABELS, ", ".join(labels)).replace(TEXT, text)


def parse_label(output: str, labels: Sequence[str]) -> str | None:
    """The corpus label an output gives: the one whose whole word (any case) comes first in it; None when no label
    word appears (an unparsable answer, scored as wrong, never dropped)."""
    found = []
    for label in labels:
        match = re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", output, flags=re.IGNORECASE)
        if match:
            found.append((match.start(), label))
    return min(found)[1] if found else None
