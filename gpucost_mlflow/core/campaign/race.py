"""The race a protocol may declare (`race: {from_round: N}`): a configuration stops being measured once more passes
cannot make it the choice. Pure: plain data in, stops out."""

from __future__ import annotations


def worst_case_passes(configs: int, passes: int, from_round: int | None) -> int:
    """The passes a campaign of `configs` configurations runs under the race when every configuration but the best
    stops at its first look (round `from_round`) and the best runs its full `passes`: the fewest it can run, what a
    budget with the race assumes. Without a race (None), or one that looks no earlier than the last round, every
    configuration runs its `passes`."""
    if configs <= 0:
        return 0
    if from_round is None or from_round >= passes:
        return configs * passes
    return (configs - 1) * from_round + passes
