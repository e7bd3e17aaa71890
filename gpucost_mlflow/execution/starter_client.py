"""A pass's child as the starter's client (execution/forkserver.py): it hands its stdin, stdout, stderr, environment
and working folder to the starter, forwards the signals it gets, and ends as the forked pass ends.

Its start is harness time, outside every timed part of the pass: the launcher runs this file by its path with no
site-packages (`python -I -S starter_client.py SOCKET SPEC`, `forkserver.command`), so it imports the standard
library only, never the package, torch or site's path hooks.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys
import time

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
SERVER_WAIT_S = 120


def connect(path: str) -> socket.socket:
    """Connect to the server, waiting up to SERVER_WAIT_S for it to finish preloading and listen."""
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


def client(path: str, spec_path: str) -> int:
    """Ask the server for a pass on `spec_path`, forward signals to it, and end as it ends."""
    connection = connect(path)
    request = {"argv": [spec_path], "env": dict(os.environ), "cwd": os.getcwd()}
    connection.sendmsg([json.dumps(request).encode() + b"\n"],
                       [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    reader = connection.makefile("rb")
    pid = json.loads(reader.readline())["pid"]
    for forwarded in FORWARDED:
        signal.signal(forwarded, lambda number, _frame: os.kill(pid, number))
    line = reader.readline()
    if not line:
        return 1
    ending = json.loads(line)
    if "signal" in ending:
        if ending["signal"] not in (signal.SIGKILL, signal.SIGSTOP):  # neither can be caught, nor set
            signal.signal(ending["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), ending["signal"])
    return int(ending.get("code", 1))


if __name__ == "__main__":
    sys.exit(client(sys.argv[1], sys.argv[2]))
