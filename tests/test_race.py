"""The race a protocol may declare (`race: {from_round: N}`): a configuration stops being measured once more passes
cannot make it the choice; the rule on plain data, with known answers."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.campaign.race import worst_case_passes


@pytest.mark.unit
@pytest.mark.parametrize("configs, passes, from_round, expected", [
    (6, 5, None, 30),  # no race: the full design
    (6, 5, 2, 15),  # five stop after 2 rounds, the best runs its 5
    (6, 5, 5, 30),  # a race that looks only at the last round saves nothing
    (1, 5, 2, 5),
    (0, 5, 2, 0),
])
def test_the_fewest_passes_a_race_runs_is_every_configuration_to_its_first_look_and_the_best_to_the_end(
        configs, passes, from_round, expected):
    assert worst_case_passes(configs, passes, from_round) == expected
