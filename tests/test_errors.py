"""Every error reaches the user or the attempts table as one line: white space folded, cut at one length."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import MESSAGE_LIMIT, one_line
from gpucost_mlflow.execution import faults

pytestmark = pytest.mark.unit


def test_an_error_over_several_lines_becomes_one_line_cut_at_the_limit():
    exc = RuntimeError("first line\n  second\tline " + "x" * 2 * MESSAGE_LIMIT)
    assert one_line(exc).startswith("first line second line x") and len(one_line(exc)) == MESSAGE_LIMIT
    assert one_line(ValueError("bad\nvalue"), named=True) == "ValueError: bad value"


def test_a_failure_reason_names_the_error_type_on_one_line():
    assert faults.reason(ValueError("bad\n value")) == "error: ValueError: bad value"


def test_a_stall_fault_sleeps_its_seconds_at_its_batch_only(monkeypatch):
    slept = []
    monkeypatch.setattr(faults.time, "sleep", slept.append)
    fault = faults.parse("stall@2:1.5")
    assert (fault.kind, fault.at, fault.seconds, fault.dupid_at) == ("stall", 2, 1.5, 0)
    for number in (1, 2, 3):
        fault.fire(number)
    assert slept == [1.5]


@pytest.mark.parametrize("value", ["stall@2", "stall@0:1", "stall@2:", "oom@2:1", "stall@2:-1"])
def test_a_malformed_fault_is_a_one_line_user_error(value):
    with pytest.raises(faults.GpucostError, match="is malformed; expected oom@N, kill@N, dupid@N, stall@N:SECONDS "
                                                  "with N >= 1, or shape-setup:SECONDS"):
        faults.parse(value)


@pytest.mark.parametrize("args, message", [
    (["--lots", "0"], "--lots must be a whole number >= 1, got '0'"),
    (["--days", "seven"], "--days must be a whole number >= 1, got 'seven'"),
    (["--accepted-results", "-1"], "--accepted-results must be a whole number >= 0, got '-1'"),
])
def test_a_whole_number_option_is_refused_in_one_line_at_the_boundary(args, message):
    result = CliRunner().invoke(main, ["packages", "--gpu", "b200", *args])
    assert result.exit_code == 2 and result.output.strip() == f"Error: {message}"
