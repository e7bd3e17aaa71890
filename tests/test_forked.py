"""A pass forked by the starter is held by its launcher as a plain child is: its exit code or signal, its stdin for a
lane's go, the signals the launcher sends it, and its death with the launcher. The starter here is the real server
and supervisor (execution/forkserver.py) with a stand-in pass in place of the runner's main and no imports to make."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpucost_mlflow.execution.forked import Forked

pytestmark = pytest.mark.integration

STAND_IN = """
import sys, time
from gpucost_mlflow.execution import forkserver

def main(argv):
    if argv[0] == "sleep":
        time.sleep(60)
    if argv[0] == "gate":
        return 7 if sys.stdin.buffer.read(1) == b"g" else 8
    return int(argv[0])

forkserver._preload = lambda: None
forkserver.runner.main = main
forkserver.serve(sys.argv[1])
"""


@pytest.fixture(scope="module")
def starter(tmp_path_factory):
    path = tmp_path_factory.mktemp("starter") / "s"
    server = subprocess.Popen([sys.executable, "-c", STAND_IN, str(path)], stdin=subprocess.DEVNULL)
    yield str(path)
    server.kill()
    server.wait()


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.05)
    return False


def test_a_forked_pass_ends_with_its_own_exit_code(starter):
    forked = Forked(starter, ["3"], dict(os.environ))
    assert forked.wait() == 3 and forked.poll() == 3 and forked.returncode == 3


def test_a_forked_pass_running_polls_none_times_out_and_reads_the_signal_that_ended_it(starter):
    forked = Forked(starter, ["sleep"], dict(os.environ))
    assert forked.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        forked.wait(timeout=0.2)
    forked.send_signal(signal.SIGTERM)
    assert forked.wait(timeout=30) == -signal.SIGTERM
    assert _gone(forked.pid)
    forked.kill()  # ended: nothing is sent, nothing fails


def test_a_forked_pass_is_killed_as_a_plain_child_is(starter):
    forked = Forked(starter, ["sleep"], dict(os.environ))
    forked.kill()
    assert forked.wait(timeout=30) == -signal.SIGKILL


def test_a_gated_pass_reads_its_go_on_stdin(starter):
    forked = Forked(starter, ["gate"], dict(os.environ), gated=True)
    assert forked.poll() is None
    forked.stdin.write(b"g")
    forked.stdin.close()
    assert forked.wait(timeout=30) == 7


def test_a_launcher_gone_takes_its_forked_pass_with_it(starter):
    forked = Forked(starter, ["sleep"], dict(os.environ))
    assert not _gone(forked.pid, within_s=0.2)
    forked._connection.close()  # what the kernel does when the launcher dies
    assert _gone(forked.pid)
