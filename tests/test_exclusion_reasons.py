"""PROTOCOL.md §6 on plain data: an exclusion's reason comes from a fixed list (`operator` with its note), a cause
recorded before the list reads as `operator`, and one exclusion rule applies to every variant compared."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.judging.excluded_alike import FlaggedPass, not_alike
from gpucost_mlflow.core.judging.exclusion_reasons import REASONS, ExclusionReason, reason_of, recorded

pytestmark = pytest.mark.unit

B200 = "NVIDIA B200"
H100 = "NVIDIA H100 80GB HBM3"


def test_the_reasons_are_the_four_flags_and_operator():
    assert REASONS == ("contended", "throttled", "starved", "cold_shapes", "operator")


@pytest.mark.parametrize("reason", ["contended", "throttled", "starved", "cold_shapes"])
def test_a_flag_is_a_reason_with_or_without_a_note(reason):
    assert reason_of(reason) == ExclusionReason(reason, "")
    assert reason_of(f" {reason.upper()} ", "  other job:\n61 % CPU ") == ExclusionReason(reason, "other job: 61 % CPU")
    assert reason_of(reason, "figures").line() == f"{reason}: figures"


def test_operator_needs_its_note():
    assert reason_of("operator", "host maintenance at 10:02").line() == "operator: host maintenance at 10:02"
    for note in (None, "", "  \n "):
        with pytest.raises(GpucostError, match=r"--reason operator needs its documented cause as --note TEXT"):
            reason_of("operator", note)


@pytest.mark.parametrize("reason", ["maintenance", "contended,throttled", "x" * 300])
def test_an_unknown_reason_is_refused_naming_every_allowed_one(reason):
    with pytest.raises(GpucostError) as refused:
        reason_of(reason, "a note")
    message = str(refused.value)
    assert message.startswith("unknown exclusion reason '") and "\n" not in message and len(message) < 200
    assert "one of contended, throttled, starved, cold_shapes, operator; nothing changed" in message


def test_no_reason_and_too_long_a_note_are_refused():
    with pytest.raises(GpucostError, match="needs its reason .* one of: contended, throttled"):
        reason_of(None)
    with pytest.raises(GpucostError, match="the note is 11 characters, at most 10"):
        reason_of("starved", "x" * 11, note_limit=10)


def test_a_cause_recorded_before_the_list_reads_as_operator_with_its_text():
    assert recorded("", "", "another job on the machine") == ExclusionReason("operator", "another job on the machine")
    assert recorded("contended", "61 % CPU", "contended: 61 % CPU") == ExclusionReason("contended", "61 % CPU")
    assert recorded("a reason not known yet", "", "") == ExclusionReason("operator", "a reason not known yet")


def passes(variant, device, count, flags=("contended",), excluded_for="", excludable=True):
    return [FlaggedPass(variant, device, frozenset(flags), excluded_for, excludable)] * count


def test_a_flag_excluded_for_one_variant_and_kept_for_another_is_said_in_one_line():
    found = not_alike(passes("batch8", B200, 2, excluded_for="contended") + passes("batch4", B200, 1)
                      + passes("batch8", B200, 3, flags=()))
    assert found == [(f"Exclusion rule not applied alike on {B200}: 2 contended passes of batch8 excluded, "
                      "1 contended pass of batch4 kept (PROTOCOL.md §6)")]


def test_every_variant_excluding_and_keeping_is_named():
    throttled = ("throttled",)
    found = not_alike(passes("batch8", B200, 2, throttled, "throttled") + passes("batch1", B200, 1, (), "throttled")
                      + passes("batch4", B200, 1, ("throttled", "starved")) + passes("batch8", B200, 1, throttled)
                      + passes("batch2", B200, 3, throttled))
    assert found == [(f"Exclusion rule not applied alike on {B200}: 2 throttled passes of batch8 and 1 of batch1 "
                      "excluded, 1 throttled pass of batch4, 1 of batch8 and 3 of batch2 kept (PROTOCOL.md §6)")]


def test_one_rule_applied_alike_says_nothing():
    alike = passes("batch8", B200, 2, excluded_for="contended") + passes("batch4", B200, 1, excluded_for="contended")
    assert not_alike(alike) == []
    assert not_alike(alike + passes("batch4", B200, 2, flags=("starved",))) == []  # another flag, never excluded
    assert not_alike(alike + passes("batch4", H100, 1)) == []  # another device: not compared with these
    assert not_alike(passes("batch8", B200, 1, excluded_for="contended") + passes("batch8", B200, 1)) == []
    assert not_alike(passes("batch4", B200, 3)) == []  # kept everywhere: alike too


def test_only_exclusions_for_the_flag_and_passes_that_could_be_excluded_count():
    assert not_alike(passes("batch8", B200, 1, excluded_for="operator") + passes("batch4", B200, 1)) == []
    rejected = passes("batch4", B200, 1, excludable=False)  # a verdict, which no exclusion may set aside
    assert not_alike(passes("batch8", B200, 1, excluded_for="contended") + rejected) == []
    cold = passes("batch8", B200, 1, (), "cold_shapes") + passes("batch4", B200, 1, ("cold_shapes",))
    assert not_alike(cold) == [(f"Exclusion rule not applied alike on {B200}: 1 cold_shapes pass of batch8 "
                                "excluded, 1 cold_shapes pass of batch4 kept (PROTOCOL.md §6)")]
