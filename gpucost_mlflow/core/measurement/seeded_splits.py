"""The random splits of permutation tests seeded alike, drawn once per number of observations.

A permutation test beyond its exact limit draws its splits from `numpy.random.default_rng(seed)`: scipy's
`permutation_test` asks that generator for one `permutation(n)` of the n observations per split, and nothing else.
Two tests seeded alike over the same number of observations (432 + 433 and 433 + 432 passes, say) draw the very
same splits, one shuffle of n at a time, which is most of a test's time at hundreds of passes a side. `Splits` keeps
the splits its first test of n observations drew and hands the same ones to each later test of n: every p-value is
the number the test would give on its own generator (tests/test_seeded_splits.py).
"""

from __future__ import annotations

import numpy as np


class Splits:
    """The splits drawn so far per number of observations, for tests that all seed their generator with `seed`."""

    def __init__(self, seed: int):
        self.seed = seed
        self.drawn: dict[int, list[np.ndarray]] = {}

    def generator(self) -> np.random.Generator:
        """A generator for one test: `default_rng(seed)`, replaying the splits an earlier test of as many
        observations drew."""
        return _Replaying(self)


class _Replaying(np.random.Generator):
    """`default_rng(seed)` (PCG64 seeded alike) whose k-th `permutation(n)` is the k-th one a test of n drew before:
    the same draw, not shuffled again. Past what was kept it catches up on its own stream and keeps what it draws."""

    def __init__(self, splits: Splits):
        super().__init__(np.random.PCG64(splits.seed))
        self._splits = splits
        self._given = 0  # splits handed out
        self._own = 0  # splits drawn from this generator's own stream

    def permutation(self, x, axis=0):  # numpy's signature
        if not isinstance(x, int | np.integer) or axis != 0:
            return super().permutation(x, axis)
        kept = self._splits.drawn.setdefault(int(x), [])
        if self._given < len(kept):
            split = kept[self._given]  # numpy indexes with these small unsigned integers as with intp
        else:
            for _ in range(self._given - self._own):  # the stream stands where the splits handed out leave it
                super().permutation(x)
            split = super().permutation(x)
            self._own = self._given + 1
            kept.append(split.astype(np.min_scalar_type(int(x))))  # 2 bytes an index up to 65,535 observations
        self._given += 1
        return split
