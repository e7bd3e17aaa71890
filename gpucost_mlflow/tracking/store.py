"""The tracking store must answer before any pass starts: reachable, writable, within seconds."""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlparse

import mlflow

from gpucost_mlflow.core.errors import GpucostError

HTTP_TIMEOUT_S = 5
# MLflow's own defaults retry for minutes; a pass must not hang on a dead server.
BOUNDED_HTTP = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}


def bound_http_retries() -> None:
    """Set the project's bounded retries and timeouts unless the user chose their own."""
    for key, value in BOUNDED_HTTP.items():
        os.environ.setdefault(key, value)


def check(uri: str | None = None) -> str:
    """Raise a one-line GpucostError unless the store at uri (default: MLflow's) is reachable and writable."""
    uri = uri or mlflow.get_tracking_uri()
    parsed = urlparse(uri)
    started = time.monotonic()
    if parsed.scheme in ("http", "https"):
        health = uri.rstrip("/") + "/health"
        try:
            with urllib.request.urlopen(health, timeout=HTTP_TIMEOUT_S) as response:
                if response.status >= 400:
                    raise GpucostError(f"tracking server {uri} answered {response.status} on /health")
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise GpucostError(f"tracking server {uri} refused the credentials (HTTP {exc.code}); set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD") from None
            raise GpucostError(f"tracking server {uri} answered HTTP {exc.code} on /health") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GpucostError(
                f"tracking server {uri} unreachable after {time.monotonic() - started:.1f} s ({reason}); no pass started"
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
            f"tracking URI {uri!r} is a file store, refused by MLflow 3 by default: use sqlite:///mlflow.db or an mlflow server"
        )
    return uri
