"""The race a protocol may declare (`race: {from_round: N}`, issue 63): a configuration stops being measured once more
passes cannot make it the choice; its field in the locked protocol, and the fewest passes it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpucost_mlflow.core.campaign.race import worst_case_passes
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from tests.helpers import ROOT

DEMO_PROTOCOL = ROOT / "projects" / "protocol-demo.yaml"


def raced(path: Path, source: Path = DEMO_PROTOCOL, from_round: int | None = 2) -> Path:
    """A copy of a protocol that declares the race from `from_round` (None: no race, the full design)."""
    document = yaml.safe_load(source.read_text())
    document.pop("race", None)
    if from_round is not None:
        document["race"] = {"from_round": from_round}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


# The protocol's field: locked with the file, read or refused in one line.

@pytest.mark.unit
def test_the_race_is_a_protocol_field_locked_with_it_and_absent_means_the_full_design(tmp_path):
    full = load_protocol(raced(tmp_path / "full.yaml", from_round=None))
    protocol = load_protocol(raced(tmp_path / "p.yaml"))
    assert full.race_from_round is None and protocol.race_from_round == 2 and protocol.digest != full.digest


@pytest.mark.unit
@pytest.mark.parametrize("declared, says", [
    ("race: 2", "field 'race' must be a mapping with from_round"),
    ("race: {from_round: 0}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {from_round: 1.5}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {from_round: true}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {}", "field 'race.from_round' must be a whole number >= 1"),
    ("race: {from_round: 6}", r"must be at most passes_per_variant \(5\)"),
    ("race: {from_rounds: 2}", "unknown field 'race.from_rounds' \\(did you mean 'race.from_round'\\?\\)"),
])
def test_a_bad_race_is_refused_in_one_line(tmp_path, declared, says):
    path = raced(tmp_path / "p.yaml", from_round=None)
    path.write_text(path.read_text() + f"\n{declared}\n")
    with pytest.raises(GpucostError, match=says) as refused:
        load_protocol(path)
    assert "\n" not in str(refused.value)


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
