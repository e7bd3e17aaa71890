"""Seeds of a stochastic protocol (PROTOCOL.md §7: several shared seeds, results kept apart; pure rules).

A protocol may declare `seeds: [0, 1, 2]`. Every variant then runs its passes at each seed, each seed's passes are a
configuration of their own (the seed is part of the identity: `core/inputs/identity.py`) judged against the
reference's passes at the same seed, and a configuration may be chosen only when every declared seed of its variant
is feasible: one seed's success does not stand for the others'. Without `seeds`, every pass runs with seed 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from gpucost_mlflow.core.errors import GpucostError

DEFAULT_SEED = 0


def parse(path: str, value) -> tuple[int, ...]:
    """seeds: a list of distinct whole numbers >= 0; () when absent (every pass at DEFAULT_SEED)."""

    if value is None:
        return ()
    if (not isinstance(value, list) or not value or len(set(map(str, value))) != len(value)
            or not all(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 for seed in value)):
        raise GpucostError(f"{path}: field 'seeds' must list distinct whole numbers >= 0 (e.g. [0, 1, 2]), got {value!r}")
    return tuple(value)


def every_seed(configs: Sequence, seeds: Sequence[int], feasible: Callable[[object], tuple[bool, str]]) -> list:
    """The configurations with `seeds_missing` set where a declared seed of the same variant (same identity but for
    the seed) has no configuration or is not feasible; unchanged when the protocol declares no seeds."""
    if not seeds:
        return list(configs)
    groups: dict[tuple, list] = {}
    for config in configs:
        groups.setdefault(_without_seed(config), []).append(config)
    result = []
    for config in configs:
        siblings = {str(getattr(c.identity, "seed", "")): c for c in groups[_without_seed(config)]}
        gaps = [f"seed {seed}: no pass" if str(seed) not in siblings else f"seed {seed}: {feasible(siblings[str(seed)])[1]}"
                for seed in seeds if str(seed) not in siblings or not feasible(siblings[str(seed)])[0]]
        result.append(replace(config, seeds_missing="; ".join(gaps)) if gaps else config)
    return result


def _without_seed(config) -> tuple:
    identity = config.identity
    values = identity.values() if identity is not None else (config.device, config.variant)
    names = type(identity).columns() if identity is not None else ()
    return tuple(v for name, v in zip(("device", "variant", *names), values) if name != "seed")
