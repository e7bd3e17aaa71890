"""The permutation p-value of two configurations' durations, a supporting figure beside the separation
(core/measurement/stats.py), and `PValues`, the p-values of a report's pairs computed beside its other work: the
same seeded numbers whichever way they are computed."""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpucost_mlflow.core.measurement.seeded_splits import Splits


EXACT_SPLITS_LIMIT = 200_000
RANDOM_RESAMPLES = 9_999
SEED = 0  # every test's random splits are seeded alike: the same p-value on every reading


def permutation_p_value(a: Sequence[float], b: Sequence[float], splits: Splits | None = None) -> float | None:
    """Two-sided permutation test of the difference of means: a supporting figure only. Exact (every
    split enumerated) up to 200,000 splits, which covers the protocol's 5 + 5 passes (252 splits); beyond,
    9,999 seeded random splits (`splits`: those drawn for earlier tests of as many passes, the same draws). The median
    is the summary shown, but with five passes a difference of medians is too coarse a test statistic (most splits
    tie), so the test uses the mean difference."""
    if len(a) < 2 or len(b) < 2:
        return None
    import numpy as np
    from scipy import stats

    exact = math.comb(len(a) + len(b), len(a)) <= EXACT_SPLITS_LIMIT

    result = stats.permutation_test(
        (np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
        lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        permutation_type="independent",
        alternative="two-sided",
        n_resamples=np.inf if exact else RANDOM_RESAMPLES,
        vectorized=True,
        rng=splits.generator() if splits is not None and not exact else np.random.default_rng(SEED),
        batch=100,  # 100 splits at a time stay in cache: 0.11 s a test at 430 + 430 passes, not 0.13 (same draws)
    )
    return float(result.pvalue)


def _random_splits(a: Sequence[float], b: Sequence[float]) -> bool:
    return min(len(a), len(b)) >= 2 and math.comb(len(a) + len(b), len(a)) > EXACT_SPLITS_LIMIT


Pair = tuple[Sequence[float], Sequence[float]]


def _p_values_of(pairs: list[Pair]) -> list[float | None]:
    """The p-values of pairs of as many passes in all, their random splits drawn once (core/measurement/
    seeded_splits.py)."""
    if len(pairs) < 2:
        return [permutation_p_value(a, b) for a, b in pairs]
    from gpucost_mlflow.core.measurement.seeded_splits import Splits  # deferred: imports numpy

    splits = Splits(SEED)
    return [permutation_p_value(a, b, splits) for a, b in pairs]


def _alike(pairs: list[Pair]) -> list[list[int]]:
    """The pairs' positions, those drawing random splits over as many passes together (most first: they take
    longest), each other pair alone."""
    groups: dict[object, list[int]] = {}
    for position, (a, b) in enumerate(pairs):
        groups.setdefault(len(a) + len(b) if _random_splits(a, b) else ("alone", position), []).append(position)
    drawn = sorted((g for key, g in groups.items() if isinstance(key, int)), key=len, reverse=True)
    return drawn + [g for key, g in groups.items() if not isinstance(key, int)]


class PValues:
    """`permutation_p_value` of each pair, started on entry and read with `result()`; the same numbers whichever way
    they are computed, each test drawing its own seeded splits (tests of as many passes in all draw the same ones,
    so those are drawn once for them all). Where two or more sizes draw random splits (numpy shuffles one split at a
    time: 0.1 s a size at hundreds of passes a side), forked workers, one fewer than the usable cores, start on them
    while the caller goes on; each takes the next group of pairs no one has taken, and so does the caller once it
    asks for the result, so that no more processes than cores contend (a third process on two cores slowed both
    others). Only when this process runs one thread (forking a threaded one can deadlock the child). Otherwise they
    are computed one after another when read."""

    def __init__(self, pairs: Sequence[Pair]):
        self.pairs = [(tuple(a), tuple(b)) for a, b in pairs]
        self._groups = _alike(self.pairs)
        self._next = None  # the next group to take, shared with the workers
        self._workers: list = []  # (process, the end of its pipe its p-values come back on)
        self._read = False

    def __enter__(self) -> PValues:  # noqa: PYI034 (3.10 has no typing.Self)
        drawn = sum(1 for group in self._groups if _random_splits(*self.pairs[group[0]]))
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if drawn < 2 or cores < 2 or threading.active_count() > 1:
            return self
        if "fork" not in multiprocessing.get_all_start_methods():
            return self
        import scipy.stats  # noqa: F401 (imported once here, not again in every worker)

        context = multiprocessing.get_context("fork")
        gc.freeze()  # the children's collector then leaves the parent's objects alone instead of copying their pages
        try:
            self._next = context.Value("i", 0)
            for _ in range(min(cores, drawn) - 1):
                receiving, sending = context.Pipe(duplex=False)
                worker = context.Process(target=self._work, args=(sending,), daemon=True)
                worker.start()
                sending.close()  # the worker's alone: its end closing says it is gone
                self._workers.append((worker, receiving))
        except (OSError, ImportError):  # no process could be forked (a sandbox's limit): the caller takes what is left
            pass
        finally:
            gc.unfreeze()
        return self

    def _work(self, sending) -> None:
        """A worker's life: the groups it took and their p-values, sent back."""
        sending.send(self._take())

    def _take(self) -> list[tuple[int, list[float | None]]]:
        """Groups no one has taken, one at a time until none is left, each with its p-values."""
        done = []
        while True:
            with self._next.get_lock():
                index = self._next.value
                self._next.value = index + 1
            if index >= len(self._groups):
                return done
            done.append((index, _p_values_of([self.pairs[p] for p in self._groups[index]])))

    def result(self) -> list[float | None]:
        self._read = True
        found: dict[int, list[float | None]] = dict(self._take()) if self._next is not None else {}
        for _, receiving in self._workers:
            try:
                found.update(receiving.recv())
            except EOFError:  # a worker gone without its p-values: its groups are computed below
                pass
        p_values: list[float | None] = [None] * len(self.pairs)
        for index, group in enumerate(self._groups):
            values = found[index] if index in found else _p_values_of([self.pairs[p] for p in group])
            for position, value in zip(group, values):
                p_values[position] = value
        return p_values

    def __exit__(self, *exc) -> None:
        for worker, receiving in self._workers:
            if not self._read:  # the build stopped before it asked: nothing waits for the rest
                worker.terminate()
            worker.join()
            receiving.close()
