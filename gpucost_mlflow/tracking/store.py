"""The tracking store must answer before any pass starts: reachable, writable, within seconds."""

from __future__ import annotations

import base64
import os
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlparse

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.tracking.spool import public_uri

HTTP_TIMEOUT_S = 5
# Both probes (/health, then an authenticated call) share one deadline, so an unreachable server
# is reported within 15 s even when it is a host that never answers.
CHECK_BUDGET_S = 12
# MLflow's own defaults retry for minutes; a pass must not hang on a dead server.
BOUNDED_HTTP = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}


# The reference's predictions are downloaded before every second-series pass: no progress bar in the
# campaign's output for each of them (unless the user asks for it).
QUIET = {"MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}


def bound_http_retries() -> None:
    """Set the project's bounded retries and timeouts, and quiet artifact downloads, unless the user chose their own."""
    for key, value in {**BOUNDED_HTTP, **QUIET}.items():
        os.environ.setdefault(key, value)


AUTH_PROBE = "/api/2.0/mlflow/experiments/search?max_results=1"
NEEDS_CREDENTIALS = "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"


def _auth_header() -> dict[str, str]:
    """The credentials MLflow's client would send, read from its environment variables (never logged)."""
    if os.environ.get("MLFLOW_TRACKING_TOKEN"):
        return {"Authorization": f"Bearer {os.environ['MLFLOW_TRACKING_TOKEN']}"}
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    return {}


def _refused(uri: str, code: int) -> GpucostError:
    user = os.environ.get("MLFLOW_TRACKING_USERNAME")
    if code == 401 and not _auth_header():
        return GpucostError(f"tracking server {uri} requires authentication (HTTP 401): {NEEDS_CREDENTIALS}")
    if code == 401:
        return GpucostError(f"tracking server {uri} refused the credentials of user '{user or 'token'}' (HTTP 401)")
    return GpucostError(f"tracking server {uri}: user '{user or 'token'}' lacks permission (HTTP 403)")


def check(uri: str | None = None) -> str:
    """Raise a one-line GpucostError unless the store at uri (default: MLflow's) is reachable and writable."""
    uri = uri or mlflow.get_tracking_uri()
    parsed = urlparse(uri)
    started = time.monotonic()
    if parsed.scheme in ("http", "https"):
        uri = public_uri(uri)
        base = uri.rstrip("/")
        for path, headers in (("/health", {}), (AUTH_PROBE, _auth_header())):
            try:
                request = urllib.request.Request(base + path, headers=headers)
                budget = max(1.0, min(CHECK_BUDGET_S - (time.monotonic() - started), 2 * HTTP_TIMEOUT_S))
                with urllib.request.urlopen(request, timeout=budget):
                    pass
            except urllib.error.HTTPError as exc:
                if exc.code in (401, 403):
                    raise _refused(uri, exc.code) from None
                raise GpucostError(f"tracking server {uri} answered HTTP {exc.code} on {path.split('?')[0]}") from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise GpucostError(
                    f"tracking server {uri} unreachable after {time.monotonic() - started:.1f} s ({reason}); no pass "
                    "started"
                ) from None
        return uri
    if parsed.scheme == "sqlite":
        path = Path(unquote(uri[len("sqlite:///"):]))
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise GpucostError(f"tracking store {uri}: folder {folder} does not exist; no pass started")
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise GpucostError(f"tracking store {uri} is not writable; no pass started")
        try:
            with sqlite3.connect(path, timeout=5) as connection:
                connection.execute("select 1")
        except sqlite3.Error as exc:
            raise GpucostError(f"tracking store {uri} cannot be opened ({exc}); no pass started") from None
        return uri
    if parsed.scheme in ("", "file"):
        raise GpucostError(
            f"tracking URI {uri!r} is a file store, refused by MLflow 3 by default: use sqlite:///mlflow.db or an "
            "mlflow server"
        )
    return uri


def is_store_error(exc: BaseException) -> bool:
    """Whether exc means the tracking store could not be reached or refused a request: an error of MLflow's client
    or its HTTP stack, or a network connection refused, reset or timed out (not a closed pipe, such as `| head`)."""
    if isinstance(exc, (MlflowException, ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError,
                        TimeoutError)):
        return True
    return type(exc).__module__.split(".")[0] in ("mlflow", "requests", "urllib3")


def describe_error(exc: BaseException) -> str:
    """One line for a tracking-store error (is_store_error): credentials refused, the server unreachable, or what
    the store said."""

    text = " ".join(str(exc).split())
    uri = public_uri(mlflow.get_tracking_uri())
    if "401" in text or "UNAUTHENTICATED" in text:
        return str(_refused(uri, 401))
    if "403" in text or "PERMISSION_DENIED" in text:
        return str(_refused(uri, 403))
    if type(exc).__module__.split(".")[0] != "mlflow" or "Max retries exceeded" in text or "Connection refused" in text:
        return f"tracking server {uri} unreachable ({one_line(exc)})"
    return f"tracking store {uri}: {one_line(exc)}"


def client() -> MlflowClient:
    """The tracking client for the store MLflow is pointed at (MLFLOW_TRACKING_URI): flows get theirs here."""
    return MlflowClient()
