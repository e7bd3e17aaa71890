"""The pass's child process: started with its spec, stopped with the launcher, its outcome read back.

A child dies with its launcher (no orphan keeps the device busy); one that dies before reporting is
a failed outcome whose completed count comes from its progress counter.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.execution import batch_counter, forked, forkserver, runner
from gpucost_mlflow.execution.orphans import die_with_parent
from gpucost_mlflow.execution.outcome import Counted, PassOutcome

CHILD_GRACE_S = 60
Child = subprocess.Popen | forked.Forked  # a pass's child as the launcher holds it: started plainly, or forked


def run(spec: runner.PassSpec, workdir: Path) -> tuple[int, bool]:
    """Run the pass's child process; returns (return code, whether the launcher was interrupted)."""
    codes, interrupted = wait([start(spec, workdir)])
    return codes[0], interrupted


def start(spec: runner.PassSpec, workdir: Path, env: dict[str, str] | None = None) -> Child:
    """Start a child on its spec (written to its work folder), with `env` added to the launcher's environment: forked
    by the starter GPUCOST_FORK_SERVER names (execution/forked.py), else a fresh interpreter; a gated child (a lane)
    gets a pipe on stdin for its go."""
    spec_path = workdir / "spec.json"
    spec_path.write_text(spec.document(), encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **(env or {}))
    if forkserver.server():
        return forked.Forked(forkserver.server(), [str(spec_path)], env, gated=spec.gate)
    return subprocess.Popen(
        [sys.executable, "-m", "gpucost_mlflow.execution.runner", str(spec_path)],
        env=env,
        stdin=subprocess.PIPE if spec.gate else None,
        # The launcher starts no threads of its own; the hook only sets PR_SET_PDEATHSIG in the child.
        preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
    )


def wait(children: list[Child]) -> tuple[list[int], bool]:
    """Wait for every child; on Ctrl-C, pass SIGINT to those still running and give them CHILD_GRACE_S to write
    their outcome before they are killed. Returns their return codes and whether the launcher was interrupted."""
    try:
        return [child.wait() for child in children], False
    except KeyboardInterrupt:
        return stop(children), True


def stop(children: list[Child]) -> list[int]:
    """SIGINT to every child still running, CHILD_GRACE_S for them to write their outcome, then SIGKILL."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    deadline = time.monotonic() + CHILD_GRACE_S
    codes = []
    for child in children:
        try:
            codes.append(child.wait(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            child.kill()
            codes.append(child.wait())
    return codes


def read_outcome(workdir: Path, returncode: int, interrupted: bool) -> PassOutcome:
    """The outcome the child wrote, or, for a child that died before writing one, a failed outcome saying how."""
    outcome = PassOutcome.read(workdir) or died(workdir, returncode)
    if interrupted and not outcome.completed:
        outcome.reason = str(Status.INTERRUPTED)
    return outcome


def died(workdir: Path, returncode: int) -> PassOutcome:
    """A child that ended without an outcome: failed, its completed count from its progress counter if it had one."""
    progress = batch_counter.read(workdir)
    if returncode < 0:
        reason = f"killed by signal {signal.Signals(-returncode).name}"
    else:
        reason = f"child exited with code {returncode} without an outcome"
    return PassOutcome(status=Status.FAILED, reason=reason, measured=Counted(
        completed_entries=progress[1] if progress else None,
        completed_entries_reason=(
            "child died before reporting; counted from its progress counter, its predictions were lost with it"
            if progress else "child died before the measured pass started"
        ),
    ))
