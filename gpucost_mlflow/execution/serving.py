"""A server a pass starts on its own machine (`endpoint.serve`: `vllm serve`, SGLang, `transformers serve`): started
in a session of its own on a free port, waited for until its `/health` answers, stopped with its whole process group.

The pass's child starts it in its load, so its start-up is part of load_s and apart from the measured clock; a server
that does not answer within `serve_timeout_s`, or exits first, fails the pass with the last lines of its log. The
server is killed with the child that started it (PR_SET_PDEATHSIG), so a killed pass leaves no server behind.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from gpucost_mlflow.core.kinds.endpoint import MODEL, PORT
from gpucost_mlflow.execution.orphans import die_with_parent

LOG_LINES = 12  # the lines of a failed server's log the pass's reason carries
POLL_S = 0.25


class ServerDown(RuntimeError):
    """The declared server did not come up: its command, how long it was waited for, and its log's last lines."""


@dataclass
class Server:
    """A started server: its process, its port, its log and how long it took to answer /health."""

    process: subprocess.Popen
    port: int
    log: Path
    started_s: float = 0.0

    def stop(self) -> None:
        """Stop the server and every process it started (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def peak_rss_bytes(self) -> float | None:
        """The server process's peak resident set (Linux VmHWM) while it still runs; None where it cannot be read."""
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) * 1024
        except OSError:
            return None
        return None


def free_port() -> int:
    """A port nothing listens on now, for the server to take."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def command(serve: str, model: str, port: int) -> list[str]:
    """The declared command as arguments, {model} and {port} put in after splitting (a path with spaces stays one);
    a program not on PATH is looked for beside this Python (a venv's bin, not activated)."""
    argv = [word.replace(MODEL, model).replace(PORT, str(port)) for word in shlex.split(serve)]
    beside = Path(sys.executable).parent / argv[0]
    if argv and not shutil.which(argv[0]) and "/" not in argv[0] and beside.exists():
        argv[0] = str(beside)
    return argv


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in lines[-LOG_LINES:] if line.strip()) or "(empty log)"


def healthy(url: str) -> bool:
    """Whether the server at this base URL answers its /health with 200."""
    parsed = urlparse(url)
    try:
        with urllib.request.urlopen(f"{parsed.scheme}://{parsed.netloc}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start(serve: str, model: str, url: str, log: Path, timeout_s: float) -> tuple[Server, str]:
    """Start the declared server and wait for its /health; the server and the base URL with its port put in.
    ServerDown when it exits or does not answer within timeout_s (the server is stopped first)."""
    port = free_port()
    argv = command(serve, model, port)
    base = url.replace(PORT, str(port))
    started = time.perf_counter()
    with log.open("wb") as out:
        try:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True,
                                       # only prctl runs between fork and exec: no lock a thread could hold is taken
                                       preexec_fn=die_with_parent)  # noqa: PLW1509
        except OSError as exc:
            raise ServerDown(f"the server command {argv[0]!r} could not start: {exc}") from None
    server = Server(process, port, log)
    while not healthy(base):
        waited = time.perf_counter() - started
        if process.poll() is not None or waited > timeout_s:
            server.stop()
            why = (f"exited with code {process.returncode}" if waited <= timeout_s
                   else f"did not answer /health within {timeout_s:g} s (endpoint.serve_timeout_s)")
            raise ServerDown(f"the server ({shlex.join(argv)[:200]}) {why}; its log's last lines: {_tail(log)}")
        time.sleep(POLL_S)
    server.started_s = time.perf_counter() - started
    return server, base
