"""Whether one exclusion rule was applied to every variant compared (PROTOCOL.md §6), read from the passes' flags.

Passes carrying a flag (contended, throttled, ...) excluded for it for one variant while passes carrying the same
flag were kept for another variant on the same device bias the comparison: the report says so, one line per device
and flag. Pure: plain records in, lines out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from gpucost_mlflow.core.judging.exclusion_reasons import FLAGS


@dataclass(frozen=True)
class FlaggedPass:
    """One benchmark pass as the check reads it: its variant and device, the flags it carries, the reason it was
    excluded for ('' when kept), and whether it could be excluded (its timing, or a failure caused from outside)."""

    variant: str
    device: str
    flags: frozenset[str] = frozenset()
    excluded_for: str = ""
    excludable: bool = True


def not_alike(passes: Iterable[FlaggedPass]) -> list[str]:
    """One line per device and flag where passes with that flag were excluded for it for one variant and kept for
    another variant on the device; [] when every variant compared was treated alike."""
    excluded: dict[tuple[str, str], Counter[str]] = {}
    kept: dict[tuple[str, str], Counter[str]] = {}
    for one in passes:
        if one.excluded_for in FLAGS:
            excluded.setdefault((one.device, one.excluded_for), Counter())[one.variant] += 1
        elif not one.excluded_for and one.excludable:
            for flag in FLAGS:
                if flag in one.flags:
                    kept.setdefault((one.device, flag), Counter())[one.variant] += 1
    lines = []
    for (device, flag), out in excluded.items():
        held = kept.get((device, flag), Counter())
        if held and len(set(out) | set(held)) > 1:
            lines.append(f"Exclusion rule not applied alike on {device}: {_counted(out, flag)} excluded, "
                         f"{_counted(held, flag)} kept (PROTOCOL.md §6)")
    return lines


def _counted(variants: Counter[str], flag: str) -> str:
    """'2 contended passes of batch8 and 1 of batch4', in the order the variants were met."""
    (first, count), *rest = variants.items()
    head = f"{count} {flag} pass{'es' if count != 1 else ''} of {first}"
    parts = [head, *(f"{n} of {variant}" for variant, n in rest)]
    return f"{', '.join(parts[:-1])} and {parts[-1]}" if rest else head
