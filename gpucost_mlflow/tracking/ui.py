"""Where the MLflow UI shows an experiment's runs: the link a user can open as is.

The UI's default landing page for an experiment is its GenAI overview (traces); the runs table is
`#/experiments/<id>/runs?workflowType=machine_learning`. A tracking server is linked directly; a database
or folder store needs `mlflow ui` started on it first, so the line says how.
"""

from __future__ import annotations

import shlex
from urllib.parse import urlparse

from gpucost_mlflow.tracking.spool import public_uri

LOCAL_UI = "http://127.0.0.1:5000"


def runs_path(experiment_id: str) -> str:
    """The UI route of an experiment's runs table (machine-learning workflow, not the GenAI overview)."""
    return f"#/experiments/{experiment_id}/runs?workflowType=machine_learning"


def root(tracking_uri: str) -> str:
    """The UI's address: the tracking server itself, or where a local `mlflow ui` serves for any other store."""
    uri = public_uri(tracking_uri)
    return uri.rstrip("/") if urlparse(uri).scheme in ("http", "https") else LOCAL_UI


def runs_url(tracking_uri: str, experiment_id: str) -> str:
    """The runs table on the tracking server itself, or on a local `mlflow ui` for any other store."""
    return f"{root(tracking_uri)}/{runs_path(experiment_id)}"


def link_line(tracking_uri: str, experiment_id: str) -> str:
    """One line for the terminal: the link, preceded by the `mlflow ui` command when the store is not a server."""
    uri = public_uri(tracking_uri)
    if urlparse(uri).scheme in ("http", "https"):
        return f"MLflow UI: {runs_url(uri, experiment_id)}"
    return (f"MLflow UI: run `mlflow ui --backend-store-uri {shlex.quote(uri)}`, then open "
            f"{runs_url(uri, experiment_id)}")
