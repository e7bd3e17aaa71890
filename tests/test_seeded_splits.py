"""Permutation tests seeded alike over as many observations draw their random splits once: the same numbers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from gpucost_mlflow.core.measurement.p_values import SEED, PValues, permutation_p_value
from gpucost_mlflow.core.measurement.seeded_splits import Splits

pytestmark = pytest.mark.unit

RNG = np.random.default_rng(7)
FAST = [10.0 + x for x in RNG.normal(0, 0.3, 14)]
SLOW = [10.2 + x for x in RNG.normal(0, 0.3, 14)]


def _test(a, b, rng, resamples=999):
    return stats.permutation_test((np.asarray(a), np.asarray(b)), lambda x, y, axis: x.mean(axis) - y.mean(axis),
                                  permutation_type="independent", n_resamples=resamples, vectorized=True, rng=rng)


def test_a_test_replaying_the_splits_of_another_of_as_many_observations_draws_exactly_its_own_generator_s():
    """12 + 13 and 13 + 12 passes (25 in all) are split by the same seeded shuffles of 25: the second test, handed
    the first's, gets the null distribution and p-value its own default_rng(SEED) gives; 11 + 13 draws anew."""
    splits = Splits(SEED)
    for a, b in ((FAST[:12], SLOW[:13]), (SLOW[:13], FAST[:12]), (FAST[:11], SLOW[:13]), (FAST[1:13], SLOW[1:])):
        replayed, own = _test(a, b, splits.generator()), _test(a, b, np.random.default_rng(SEED))
        assert np.array_equal(replayed.null_distribution, own.null_distribution)
        assert replayed.pvalue == own.pvalue
    assert sorted((n, len(kept)) for n, kept in splits.drawn.items()) == [(24, 999), (25, 999)]


def test_a_test_drawing_more_splits_than_were_kept_goes_on_from_where_its_own_stream_stands():
    splits = Splits(SEED)
    _test(FAST, SLOW, splits.generator(), resamples=300)
    longer, own = _test(SLOW, FAST, splits.generator(), 999), _test(SLOW, FAST, np.random.default_rng(SEED), 999)
    assert np.array_equal(longer.null_distribution, own.null_distribution)
    assert len(splits.drawn[28]) == 999


def test_a_tables_p_values_are_each_tests_own_whether_or_not_alike_pairs_share_their_splits():
    """Grouped by their passes in all (the exact 5 + 5 and a pair too small alone), in the pairs' order."""
    pairs = [(FAST[:12], SLOW[:13]), ([1.0, 2, 3, 4, 5], [6.0, 7, 8, 9, 10]), (SLOW[:13], FAST[:12]),
             (FAST[:11], SLOW[:13]), ([1.0], [2.0, 3.0]), (SLOW[:12], FAST[:13])]
    alone = [permutation_p_value(a, b) for a, b in pairs]
    assert PValues(pairs).result() == alone
    assert alone[1] == pytest.approx(2 / 252) and alone[4] is None and 0 < min(alone[0], alone[2], alone[3])
