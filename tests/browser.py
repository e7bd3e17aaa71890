"""Headless Chromium for the browser tests: one way to start it, and where its screenshots are kept.

Needs Debian's `chromium` (/usr/bin/chromium); `make test` installs it. Without it a browser test fails, it never
skips. Screenshots go to `test-artifacts/` at the repository root (gitignored), one folder per test module, so a
person can look at what the test saw after `make test`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def chromium(profile_root: Path, *args: str, width: int, height: int, timeout_s: float = 60) -> subprocess.CompletedProcess:
    """Run headless Chromium once with a fresh profile under profile_root; fail the test on a timeout or an error."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as `make test` does")
    profile = profile_root / f"profile-{len(list(profile_root.glob('profile-*')))}"
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               # /etc/chromium.d/dev-shm adds this only when its /dev/shm size check works; CI containers have 64 MiB
               "--disable-dev-shm-usage", f"--user-data-dir={profile}",
               f"--window-size={width},{height}", *args]
    env = {**os.environ, "HOME": str(profile_root)}
    env.pop("DISPLAY", None)
    # Own session, so a timeout kills the browser's renderer and zygote children too (they hold the pipes).
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"chromium did not finish within {timeout_s:g} s: {command}\n{stderr[-4000:]}")
    assert process.returncode == 0, f"chromium exited {process.returncode}: {command}\n{stderr[-4000:]}"
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def keep(path: Path, folder: str) -> Path:
    """Copy a screenshot to test-artifacts/<folder>/ (gitignored) and return the copy's path."""
    target = ARTIFACTS / folder
    target.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(path, target / path.name))
