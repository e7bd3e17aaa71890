"""A protocol's seeds in the report (PROTOCOL.md §7): each seed's passes judged apart, and one configuration pooling
them, which the decision reads (core/judging/seeds.py holds the rules; this module reads the attempts)."""

from __future__ import annotations

from dataclasses import replace

from gpucost_mlflow.core.inputs.identity import Identity, pooled
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.judging.seeds import every_seed, kept_apart
from gpucost_mlflow.core.money.decision import Configuration
from gpucost_mlflow.core.money.feasibility import feasibility
from gpucost_mlflow.report.configurations import configurations as apart_by_identity
from gpucost_mlflow.report.measured import BENCHMARK, ReportAttempts


def configurations(measured: ReportAttempts, protocol: Protocol) -> tuple[list[Configuration], list[str]]:
    """The configurations the decision reads, and a line per one that ran at several seeds: under a protocol's seeds,
    one per identity but for the seed, pooling every seed's passes, feasible only when each seed's own passes are."""
    apart = apart_by_identity(measured, protocol.corpus_size)
    if not protocol.seeds:
        return apart, []
    together = apart_by_identity(pooled_seeds(measured), protocol.corpus_size)
    return (every_seed(together, apart, protocol.seeds,
                       lambda config: feasibility(config, protocol.passes_per_variant)),
            kept_apart(apart))


def pooled_seeds(measured: ReportAttempts) -> ReportAttempts:
    """The attempts with each benchmark pass's identity holding every seed its configuration ran at ('0,1'): the
    seeds are repetitions of one configuration, whose durations pool them all. The table is the same."""
    seeds: dict[Identity, set[str]] = {}
    for attempt in measured.attempts:
        if attempt.role == BENCHMARK:
            seeds.setdefault(replace(attempt.identity, seed=""), set()).add(attempt.identity.seed)
    together = {unseeded: pooled(found) for unseeded, found in seeds.items()}
    return ReportAttempts(tuple(replace(a, identity=replace(a.identity, seed=together[replace(a.identity, seed="")]))
                                if a.role == BENCHMARK else a for a in measured.attempts), measured.table)
