"""Short configuration names for the decision card, the first table and the figures: one rule, applied the same
way everywhere, so a name read in the card is the name in the figure (the later tables keep the full names).

The rule: each `-`-separated word of a variant found in ABBREVIATIONS is replaced by its abbreviation
(`batch8-lengthgrouped` -> `batch8-lg`); a distinction in brackets is kept as it is; the device is left out of
every name when all configurations share it (said once instead), else shortened by dropping vendor marks
(`NVIDIA GeForce RTX 4090` -> `RTX 4090`). Two configurations whose short names would collide keep their full
names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpucost_mlflow.core.money.decision import Configuration

ABBREVIATIONS = {"lengthgrouped": "lg"}
DEVICE_MARKS = re.compile(r"\((?:R|TM)\)|\bNVIDIA\b|\bGeForce\b|\bProcessor\b", re.IGNORECASE)


def variant(label: str) -> str:
    """`batch64-bf16-lengthgrouped [torch 2.13]` -> `batch64-bf16-lg [torch 2.13]`: the words of the variant
    abbreviated, a bracketed distinction kept."""
    head, bracket, rest = label.partition(" [")
    words = [ABBREVIATIONS.get(word, word) for word in head.split("-")]
    return "-".join(words) + (bracket + rest if bracket else "")


def device(name: str) -> str:
    """`NVIDIA GeForce RTX 4090` -> `RTX 4090`, `Intel(R) Xeon(R) Processor` -> `Intel Xeon`; the name itself
    when nothing is left."""
    shortened = " ".join(DEVICE_MARKS.sub(" ", name).split())
    return shortened or name


@dataclass(frozen=True)
class Names:
    """Each configuration's short name, the one device they share ('' when they differ), and the abbreviations
    the names use (`lg = lengthgrouped`)."""

    short: dict[str, str] = field(default_factory=dict)  # Configuration.name -> short name
    device: str = ""
    abbreviations: tuple[str, ...] = ()

    def of(self, config: Configuration) -> str:
        """The configuration's short name (its full name when it was not among those named)."""
        return self.short.get(config.name, config.name)

    def legend(self) -> str:
        """'Every configuration ran on Intel(R) Xeon(R) Processor; lg = lengthgrouped.' ('' when nothing to say)."""
        parts = [f"Every configuration ran on {self.device}"] if self.device else []
        parts += [f"short names: {', '.join(self.abbreviations)}"] if self.abbreviations else []
        text = "; ".join(parts)
        return f"{text[:1].upper()}{text[1:]}." if text else ""


def names(configs: list[Configuration]) -> Names:
    """Short names of these configurations under the one rule; colliding short names fall back to full ones."""
    devices = list(dict.fromkeys(c.device for c in configs))
    shared = devices[0] if len(devices) == 1 else ""
    wanted = {c.name: variant(c.label) if shared else f"{variant(c.label)} on {device(c.device)}" for c in configs}
    count: dict[str, int] = {}
    for text in wanted.values():
        count[text] = count.get(text, 0) + 1
    short = {name: text if count[text] == 1 else name for name, text in wanted.items()}
    used = sorted({f"{abbreviation} = {word}" for word, abbreviation in ABBREVIATIONS.items()
                   for c in configs if word in c.variant.split("-") and short[c.name] != c.name})
    return Names(short, shared, tuple(used))
