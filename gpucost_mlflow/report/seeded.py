"""A protocol's seeds in the report (PROTOCOL.md §7): each seed's passes judged apart, and one configuration pooling
them, which the decision reads (core/judging/seeds.py holds the rules; this module reads the attempts table)."""

from __future__ import annotations

import pandas as pd

from gpucost_mlflow.core.inputs.identity import pooled
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.judging.seeds import every_seed, kept_apart
from gpucost_mlflow.core.money.decision import Configuration, feasibility
from gpucost_mlflow.report import tables


def configurations(table: pd.DataFrame, protocol: Protocol) -> tuple[list[Configuration], list[str]]:
    """The configurations the decision reads, and a line per one that ran at several seeds: under a protocol's seeds,
    one per identity but for the seed, pooling every seed's passes, feasible only when each seed's own passes are."""
    apart = tables.configurations(table, protocol.corpus_size)
    if not protocol.seeds:
        return apart, []
    together = tables.configurations(pooled_seeds(table), protocol.corpus_size)
    return (every_seed(together, apart, protocol.seeds, lambda config: feasibility(config, protocol.passes_per_variant)),
            kept_apart(apart))


def pooled_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """The attempts with each benchmark pass's seed read as every seed its configuration ran at ('0,1'): the seeds
    are repetitions of one configuration, whose durations pool them all."""
    if "seed" not in table or not len(table):
        return table
    bench = table["role"] == "benchmark"
    same = [key for key in ("device", "variant", *tables.IDENTITY) if key in table and key != "seed"]
    seeds = table[bench].groupby(same, sort=False, dropna=False)["seed"].transform(lambda s: pooled(s.fillna("")))
    return table.assign(seed=seeds.reindex(table.index).where(bench, table["seed"]))
