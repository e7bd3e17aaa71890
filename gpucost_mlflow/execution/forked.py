"""A pass forked by the starter (execution/forkserver.py), held by the launcher as it holds a plain child.

The launcher connects to the starter itself and hands it the spec, its stdin (a pipe for a lane's go), stdout and
stderr, environment and working folder; the starter's supervisor forks the pass and answers its pid, then how it
ended. `Forked` answers `wait`, `poll`, `send_signal` and `kill` as `subprocess.Popen` does (a pass ended by a signal:
its negative number), so `execution/child.py` waits for, interrupts and reads back a forked pass as a plain one. No
process stands between them: a signal is sent to the supervisor, which still holds the pass unreaped, and a launcher
that dies closes the connection, on which the supervisor kills the pass.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import subprocess
import time

SERVER_WAIT_S = 120


def connect(path: str) -> socket.socket:
    """Connect to the starter, waiting up to SERVER_WAIT_S for it to finish its imports and listen."""
    deadline = time.monotonic() + SERVER_WAIT_S
    while True:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(path)
            return connection
        except (FileNotFoundError, ConnectionRefusedError):
            connection.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Forked:
    """One forked pass: its pid, its stdin when gated, and its return code once the supervisor said how it ended."""

    def __init__(self, server: str, argv: list[str], env: dict[str, str], gated: bool = False):
        """Ask the starter at `server` for a pass on `argv`, with this environment (`gated`: a pipe on its stdin)."""
        self.args, self.returncode, self.stdin = argv, None, None
        self._connection = connect(server)
        read_end = None
        if gated:
            read_end, write_end = os.pipe()
            self.stdin = os.fdopen(write_end, "wb")
        try:
            request = {"argv": argv, "env": env, "cwd": os.getcwd()}
            fds = [read_end if read_end is not None else 0, 1, 2]
            self._connection.sendmsg([json.dumps(request).encode() + b"\n"],
                                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        finally:
            if read_end is not None:
                os.close(read_end)
        self._buffer = b""
        answer = self._line(None)
        self.pid = int(json.loads(answer)["pid"]) if answer else None
        if not answer:  # no pass was forked: it ends as a child that could not start
            self._ended(json.dumps({"code": 1}).encode())

    def wait(self, timeout: float | None = None) -> int:
        """Block until the pass ended (TimeoutExpired after `timeout` seconds); its return code."""
        if self.returncode is None:
            self._ended(self._line(timeout))
        return self.returncode

    def poll(self) -> int | None:
        """The return code if the pass has ended, else None, without waiting."""
        if self.returncode is None:
            try:
                self.wait(0)
            except subprocess.TimeoutExpired:
                return None
        return self.returncode

    def send_signal(self, number: int) -> None:
        """Send the pass this signal, through its supervisor (a pass that ended gets nothing)."""
        if self.returncode is None:
            try:
                self._connection.sendall(bytes([int(number)]))
            except OSError:
                pass  # the supervisor is gone: so is the pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _line(self, timeout: float | None) -> bytes:
        """The supervisor's next line, b"" once it closed the connection (TimeoutExpired after `timeout` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._connection], [], [], left)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout)
            chunk = self._connection.recv(4096)
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _ended(self, line: bytes) -> None:
        """The supervisor's last word (the pass's exit code, or the signal that ended it), then the connection closed;
        no word at all (the starter killed) reads as a pass killed."""
        ending = json.loads(line) if line else {"signal": int(signal.SIGKILL)}
        self.returncode = -int(ending["signal"]) if "signal" in ending else int(ending.get("code", 1))
        self._connection.close()
