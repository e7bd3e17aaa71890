"""Seeds of a stochastic protocol (PROTOCOL.md §7: several shared seeds, results kept apart; pure rules).

A protocol may declare `seeds: [0, 1, 2]`. Every variant then runs its passes at each seed, and each seed's passes are
judged against the reference's passes at the same seed. The seeds are repetitions of one configuration: its identity
holds every seed it ran at (`core/inputs/identity.py`), its durations pool every seed's passes (so its stability, its
slowest pass and the committed plan cover its slowest seed), and it is feasible only when every declared seed's own
passes are: one seed's success does not stand for the others'. Without `seeds`, every pass runs with seed 0. The
protocol's `seeds` field is read with the protocol (core/inputs/method_fields.py, `seeds`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

DEFAULT_SEED = 0


def every_seed(pooled: Sequence, apart: Sequence, seeds: Sequence[int],
               feasible: Callable[[object], tuple[bool, str]]) -> list:
    """The configurations pooling their seeds' passes, with `seeds_missing` naming each declared seed whose own passes
    (its configuration in `apart`, same identity but for the seed) are missing or not feasible; `pooled` unchanged
    when the protocol declares no seeds."""
    if not seeds:
        return list(pooled)
    by_seed: dict[tuple, dict[str, object]] = {}
    for config in apart:
        by_seed.setdefault(_without_seed(config), {})[_seed(config)] = config
    result = []
    for config in pooled:
        siblings = by_seed.get(_without_seed(config), {})
        gaps = [f"seed {seed}: no pass" if str(seed) not in siblings
                else f"seed {seed}: {feasible(siblings[str(seed)])[1]}"
                for seed in seeds if str(seed) not in siblings or not feasible(siblings[str(seed)])[0]]
        result.append(replace(config, seeds_missing="; ".join(gaps)) if gaps else config)
    return result


def kept_apart(apart: Sequence) -> list[str]:
    """One line per configuration that ran at several seeds: each seed's passes and median, so the seeds' results stay
    apart in the report though the decision reads them as one configuration."""
    groups: dict[tuple, list] = {}
    for config in apart:
        groups.setdefault(_without_seed(config), []).append(config)
    lines = []
    for members in groups.values():
        members = sorted(members, key=lambda c: (len(_seed(c)), _seed(c)))
        if len(members) > 1:
            each = "; ".join(f"seed {_seed(c)} {len(c.durations.values)} pass(es), median "
                             + (f"{c.durations.median:,.3f} s" if c.durations.values else "none") for c in members)
            lines.append(f"{members[0].variant} on {members[0].device} ran at seeds "
                         f"{', '.join(_seed(c) for c in members)}: one configuration, committed at its slowest seed's "
                         f"passes ({each})")
    return lines


def _seed(config) -> str:
    return str(getattr(config.identity, "seed", ""))


def _without_seed(config) -> tuple:
    identity = config.identity
    values = identity.values() if identity is not None else (config.device, config.variant)
    names = type(identity).columns() if identity is not None else ()
    return tuple(v for name, v in zip(("device", "variant", *names), values) if name != "seed")
