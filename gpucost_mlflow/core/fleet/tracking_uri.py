"""The tracking store a fleet's machines write to: whether a cloud machine can reach it, and what of it is secret.

A fleet's campaigns write to one tracking server from machines in the cloud: a local SQLite file or a server on this
machine's loopback is unreachable from there. The URI may carry a password (postgresql://user:pass@host/db), and the
MLflow client reads credentials from the environment: all of them travel as SkyPilot secrets, never in a file, a
run or a printed line.
"""

from __future__ import annotations

import ipaddress
import urllib.parse

# The MLflow client's environment variables that may hold a credential: passed to each job as SkyPilot secrets.
SECRET_VARIABLES = ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD",
                    "MLFLOW_TRACKING_TOKEN")
LOCAL_SCHEMES = ("", "file", "sqlite")
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def unreachable(uri: str) -> str:
    """Why a machine in the cloud cannot reach this tracking URI ('' when it may): a file or SQLite store here, or a
    server on this machine's loopback."""
    if not uri:
        return "no MLFLOW_TRACKING_URI is set: MLflow's default is a store on this machine"
    parsed = urllib.parse.urlsplit(uri)
    scheme = parsed.scheme.split("+")[0].lower()
    if scheme in LOCAL_SCHEMES or len(scheme) == 1:  # a Windows drive letter is a path too
        return f"{redacted(uri)} is a store on this machine"
    host = (parsed.hostname or "").lower()
    if not host:
        return f"{redacted(uri)} names no host"
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return f"{redacted(uri)} is this machine's loopback"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return ""
    if address.is_loopback or address.is_unspecified:
        return f"{redacted(uri)} is this machine's loopback"
    return ""


def redacted(uri: str) -> str:
    """The URI with its password (and any query, which may hold a token) replaced by ***."""
    parsed = urllib.parse.urlsplit(uri)
    if not parsed.netloc:
        return uri
    netloc = parsed.netloc
    if "@" in netloc:
        userinfo, hostport = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{hostport}" if ":" in userinfo else f"{user}@{hostport}"
    return urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "***" if parsed.query else "", ""))


def secrets(environ: dict[str, str]) -> dict[str, str]:
    """The credentials set here, by name: what each job gets as SkyPilot secrets."""
    return {name: environ[name] for name in SECRET_VARIABLES if environ.get(name)}
