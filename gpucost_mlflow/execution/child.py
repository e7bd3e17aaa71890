"""The pass's child process: started with its spec, stopped with the launcher, its outcome read back.

A child dies with its launcher (no orphan keeps the device busy); one that dies before reporting is
a failed outcome whose completed count comes from its progress counter.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from gpucost_mlflow.execution import batch_counter, runner
from gpucost_mlflow.execution.outcome import PassOutcome

CHILD_GRACE_S = 60


def run(spec: runner.PassSpec, workdir: Path) -> tuple[int, bool]:
    """Run the pass's child process; returns (return code, whether the launcher was interrupted)."""
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec.__dict__), encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    child = subprocess.Popen(
        [sys.executable, "-m", "gpucost_mlflow.execution.runner", str(spec_path)],
        env=env,
        # The launcher starts no threads of its own; the hook only sets PR_SET_PDEATHSIG in the child.
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
    )
    interrupted = False
    while True:
        try:
            return child.wait(), interrupted
        except KeyboardInterrupt:
            interrupted = True
            child.send_signal(signal.SIGINT)
            try:
                return child.wait(timeout=CHILD_GRACE_S), interrupted
            except subprocess.TimeoutExpired:
                child.kill()


def _die_with_parent() -> None:
    """The child gets SIGKILL if the launcher dies, so no orphan keeps the device busy."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def read_outcome(workdir: Path, returncode: int, interrupted: bool) -> PassOutcome:
    """The outcome the child wrote, or, for a child that died before writing one, a failed outcome saying how."""
    outcome = PassOutcome.read(workdir) or died(workdir, returncode)
    if interrupted and not outcome.completed:
        outcome.reason = "interrupted"
    return outcome


def died(workdir: Path, returncode: int) -> PassOutcome:
    """A child that ended without an outcome: failed, its completed count from its progress counter if it had one."""
    progress = batch_counter.read(workdir)
    if returncode < 0:
        reason = f"killed by signal {signal.Signals(-returncode).name}"
    else:
        reason = f"child exited with code {returncode} without an outcome"
    return PassOutcome(
        status="failed", reason=reason, completed_entries=progress[1] if progress else None,
        completed_entries_reason=(
            "child died before reporting; counted from its progress counter, its predictions were lost with it"
            if progress else "child died before the measured pass started"
        ),
    )
