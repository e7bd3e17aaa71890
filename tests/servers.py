"""Real servers for the team-scale tests: a PostgreSQL cluster and an `mlflow server` on 127.0.0.1.

Both run from throwaway folders and are stopped by the fixtures that start them. PostgreSQL comes
from Debian's packages (`make test` installs them when missing); as root it runs as user postgres.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

DB_USER = "gpucost"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bindir() -> Path | None:
    """Debian's versioned bin folder (initdb and pg_ctl are not on PATH there), or the PATH's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_postgres_user(command: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as the packages' postgres user."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--"] + command


@dataclass
class Postgres:
    folder: Path
    port: int
    bindir: Path

    @property
    def uri(self) -> str:
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/mlflow"

    def stop(self) -> None:
        subprocess.run(check=False, args=_as_postgres_user([str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast",
                                          "-w", "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres() -> Postgres:
    bindir = postgres_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (make test installs Debian's postgresql package)")
    folder = Path(tempfile.mkdtemp(prefix="gpucost-pg-"))
    os.chmod(folder, 0o755)
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    port = free_port()
    run = lambda *args: subprocess.run(_as_postgres_user(list(args)), check=True, capture_output=True, timeout=120)
    run(str(bindir / "initdb"), "-D", str(folder / "data"), "-U", DB_USER, "--auth=trust", "-E", "UTF8")
    run(str(bindir / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "log"), "-w", "-o",
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200", "start")
    run(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", DB_USER, "mlflow")
    return Postgres(folder, port, bindir)


@dataclass
class MlflowServer:
    backend_uri: str
    folder: Path
    port: int = field(default_factory=free_port)
    auth_password: str = ""
    host: str = "127.0.0.1"  # another of this machine's addresses for a client that refuses the loopback (a fleet)
    process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        command = [
            str(Path(sys.executable).parent / "mlflow"), "server",
            "--backend-store-uri", self.backend_uri,
            "--artifacts-destination", (self.folder / "artifacts").as_uri(),
            "--host", self.host, "--port", str(self.port), "--workers", "1",  # one: half the start on 2 cores
        ]
        if self.auth_password:
            command += ["--app-name", "basic-auth"]
        if self.host != "127.0.0.1":  # MLflow answers other Host headers than localhost and private addresses only so
            command += ["--allowed-hosts", f"{self.host}:{self.port},{self.host}"]
        return command

    def start(self, timeout_s: float = 180) -> MlflowServer:
        """Start (or restart on the same port and store) and wait until /health answers."""
        env = dict(os.environ)
        env.pop("MLFLOW_TRACKING_URI", None)
        # MLflow 3's job runner (eight huey consumers, each importing mlflow: about 20 s of CPU per start on 2 cores)
        # serves GenAI jobs that gpucost never submits; runs, metrics and artifacts are served the same without it.
        env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
        if self.auth_password:
            config = self.folder / "basic_auth.ini"
            config.write_text(
                "[mlflow]\ndefault_permission = READ\n"
                f"database_uri = sqlite:///{self.folder / 'auth.db'}\n"
                f"admin_username = admin\nadmin_password = {self.auth_password}\n"
                "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
                "auth_cache_ttl_seconds = 60\n",
                encoding="utf-8",
            )
            env["MLFLOW_AUTH_CONFIG_PATH"] = str(config)
            env["MLFLOW_FLASK_SERVER_SECRET_KEY"] = "gpucost-test-only"
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server writes to it for its whole life
        self.process = subprocess.Popen(self.command(), env=env, stdout=log, stderr=subprocess.STDOUT,
                                        cwd=self.folder, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {(self.folder / 'server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=2):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer within {timeout_s} s")

    def stop(self) -> None:
        """Stop the server and every worker it started (its own process group): a few seconds' grace, then killed
        (its graceful shutdown waits on idle keep-alive connections for about 10 s, and the test is over)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def kill(self) -> None:
        """An outage: the server and its workers die at once."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
