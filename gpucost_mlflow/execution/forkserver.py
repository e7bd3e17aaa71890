"""A pass's child started without importing torch and transformers again for every pass: the starter.

`python -m gpucost_mlflow.execution.forkserver serve SOCKET` imports what a pass's child imports, timing it, then
forks one process per request. When `GPUCOST_FORK_SERVER` names that socket, `execution/child.py` asks it for the
pass (`execution/forked.py`, the launcher's handle) instead of starting the runner: the launcher hands it its stdin,
stdout, stderr, environment and working folder, sends it the signals the pass is to get, and reads how the forked
pass ended (same exit code, same signal). The pass itself runs the runner's own `main` on the same spec,
so its outputs, checks and records are the product's.

Two users. A campaign under a protocol with `child_imports: once` starts its own starter (`serving`) for its passes:
the imports are paid once, and each pass records their time as `import_s` and counts it in its `load_s`, so the
start-up a worker pays, which the forecast reads, is the same as with a child that imports them itself (PROTOCOL.md
section 4: load is recorded apart from the measured pass, never dropped). The test suite starts one for its whole run
(tests/conftest.py; `docs/architecture.md`, "Tests", says which tests start their children the product's way).

Each request is served by a supervisor forked from the server, which forks the pass and waits for it: the
server itself never waits and starts no thread, so every fork happens in a single-threaded process.
"""

from __future__ import annotations

import array
import contextlib
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from gpucost_mlflow.core.kinds import engines, registry
from gpucost_mlflow.execution import runner
from gpucost_mlflow.execution.orphans import die_with_parent

ENV = "GPUCOST_FORK_SERVER"
IMPORTS_ENV = "GPUCOST_IMPORT_S"  # set in a forked pass: the seconds the server's imports took, once
_MAX_MESSAGE = 1 << 20
# The signals a pass resets to their defaults (the server's own handlers are not the pass's): a plain child's.
DEFAULTED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def server() -> str:
    """The starter's socket named by GPUCOST_FORK_SERVER, '' when a pass's child starts plainly."""
    return os.environ.get(ENV, "")


def _preload() -> None:
    """Import what a pass's child imports before its clock starts: torch, transformers, and each shipped kind's child
    module with what its `preload()` names (the model classes transformers loads lazily)."""
    import torch  # noqa: F401 - heavy: the import this server exists to do once
    import transformers  # noqa: F401 - heavy, as torch

    from gpucost_mlflow.execution import runner  # noqa: F401 - defers torch: imported here, once

    for kind in registry.shipped():
        module = importlib.import_module(engines.engine(engines.DEFAULT).module(kind.package))
        getattr(module, "preload", lambda: None)()


def imported_s() -> float | None:
    """In a forked pass, the seconds its starter's imports took (its load_s counts them); None in a plain child."""
    value = os.environ.get(IMPORTS_ENV, "")
    try:
        return float(value) if value else None
    except ValueError:
        return None


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """A starter for the passes started inside: its socket in GPUCOST_FORK_SERVER, the server killed on the way out
    (and with its launcher). One already named there (the test suite's) is used as it is."""
    if os.environ.get(ENV):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="gpucost-starter-") as folder:
        path = str(Path(folder) / "s")
        # Its own session: a Ctrl-C reaches each pass through its client, which forwards it, as a plain child gets
        # it; the imports read the offline switches as a plain child's would.
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        hook = die_with_parent if sys.platform.startswith("linux") else None
        server = subprocess.Popen([sys.executable, "-m", "gpucost_mlflow.execution.forkserver", "serve", path],
                                  env=env, stdin=subprocess.DEVNULL, start_new_session=True,
                                  preexec_fn=hook)  # noqa: PLW1509 - the launcher starts no threads
        os.environ[ENV] = path
        try:
            yield
        finally:
            os.environ.pop(ENV, None)
            server.kill()
            server.wait()


def serve(path: str) -> None:
    """Preload (timed), listen on the socket `path`, then fork a supervisor per request until killed."""
    started = time.perf_counter()
    _preload()
    os.environ[IMPORTS_ENV] = f"{time.perf_counter() - started:.3f}"
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel: the server never waits
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.replace(path + ".tmp", path)  # the socket appears whole: a client that sees it can connect
    listener.listen(64)
    while True:
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _supervise(connection)
            finally:
                os._exit(0)
        connection.close()


def _supervise(connection: socket.socket) -> None:
    """Fork the pass with the launcher's descriptors, environment and folder; report its pid, then how it ended.
    Each byte the launcher sends is a signal for the pass; a launcher that goes away takes the pass with it."""
    message, fds = _receive(connection)
    request = json.loads(message)
    pid = os.fork()
    if pid == 0:
        connection.close()
        _run_pass(request, fds)
    for fd in fds:
        os.close(fd)
    connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    pidfd = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([connection, pidfd], [], [])
        if pidfd in ready:
            break
        numbers = connection.recv(64)
        if not numbers:  # the launcher is gone: so is the pass
            os.kill(pid, signal.SIGKILL)
            break
        for number in numbers:  # not reaped yet: the pid is still the pass's
            os.kill(pid, number)
    _, status = os.waitpid(pid, 0)
    ending = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"code": os.waitstatus_to_exitcode(status)}
    try:
        connection.sendall(json.dumps(ending).encode() + b"\n")
    except OSError:
        pass


def _run_pass(request: dict, fds: list[int]) -> None:
    """In the forked pass: become the runner's process for this spec, then run its main and exit with its code."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        for number in DEFAULTED:
            signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)
        imports = os.environ.get(IMPORTS_ENV, "")
        os.environ.clear()
        os.environ.update(request["env"], **{IMPORTS_ENV: imports})
        os.chdir(request["cwd"])
        # sys.path as `python -m` in the launcher's folder with its PYTHONPATH would start it (a kind or a stand-in
        # module kept outside the package is found the same way).
        extra = [entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry]
        sys.path[:1] = [request["cwd"], *extra]
        importlib.invalidate_caches()
        sys.argv = ["gpucost_mlflow.execution.runner", *request["argv"]]
        from gpucost_mlflow.execution import child  # breaks a cycle: child imports this module to build its command

        child.die_with_parent()  # SIGKILL if the supervisor dies, as a plain child gets it when its launcher dies
        _threads_from_env()

        code = runner.main(request["argv"])
    except BaseException:  # noqa: BLE001 - a pass that cannot start still ends with an exit code
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _threads_from_env() -> None:
    """OMP_NUM_THREADS was read when the server imported torch; a lane's share is applied here instead."""
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        import torch  # defers torch: imported by the server already, needed only here

        torch.set_num_threads(int(threads))


def _receive(connection: socket.socket) -> tuple[bytes, list[int]]:
    """One request: a JSON line and the descriptors sent with its first bytes."""
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        chunk, ancillary, _, _ = connection.recvmsg(_MAX_MESSAGE, socket.CMSG_SPACE(3 * fds.itemsize))
        if not chunk:
            raise ConnectionError("client closed before its request was whole")
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        data += chunk
    return data, list(fds)


if __name__ == "__main__":
    role, socket_path = sys.argv[1:3]
    if role != "serve":
        sys.exit(f"unknown role {role!r}: the starter only serves (the launcher's side is execution/forked.py)")
    serve(socket_path)
