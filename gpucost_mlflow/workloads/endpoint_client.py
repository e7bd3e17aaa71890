"""The child's side of an OpenAI-compatible endpoint (`engine: openai`), whatever the kind sends it: the key from the
environment, the server a pass starts (execution/serving.py), the served model checked and the endpoint's identity,
the requests sent at the declared concurrency, and what every endpoint pass records (its tags, its memory).

Each kind's `with_openai.py` says what one request is (a chat or completion, a batch of texts to embed) and reads its
answer; everything else an endpoint pass does is here, once.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.endpoint import MODEL, NO_KEY, Endpoint
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import EngineOptions
from gpucost_mlflow.core.names import (
    CONVERT_S,
    ENDPOINT_FAILED_TAG,
    ENDPOINT_TAG,
    MFU_PADDED,
    MFU_USEFUL,
    SERVER_START_S,
    USEFUL_FLOP_PER_S,
)
from gpucost_mlflow.execution import serving

NOT_COUNTED = "the endpoint's server does the work: its FLOPs are not counted here"
FLOP_KEYS = (USEFUL_FLOP_PER_S, MFU_USEFUL, MFU_PADDED)


@dataclass
class Client:
    """The endpoint as a pass talks to it: the client's arguments, the model id, what it was declared with, its
    server, and the inputs whose request failed after the retries. Each pass of requests opens its own async client
    in its own event loop and closes it."""

    arguments: dict
    model: str
    endpoint: Endpoint
    identity: str
    server: serving.Server | None = None
    failed: list[str] = field(default_factory=list)

    def fail(self, ident: str, error: BaseException) -> None:
        """Keep why an input got no output, for the pass's tag (coverage counts the input itself)."""
        self.failed.append(f"{ident}: {type(error).__name__}: {str(error)[:200]}")


def options(settings: Settings, **more) -> EngineOptions:
    """What the manifest records of the endpoint: everything declared (its own record, `Endpoint`), the key's variable
    by name only, and what the workload adds (`more`)."""
    return EngineOptions({"api": f"openai {settings.endpoint.api}", **settings.endpoint.record(), **more})


def key(endpoint: Endpoint) -> str:
    """The API key from the variable the variant names; a local server's placeholder when it names none."""
    if not endpoint.api_key_env:
        return NO_KEY
    found = os.environ.get(endpoint.api_key_env, "")
    if not found:
        raise GpucostError(f"endpoint.api_key_env names {endpoint.api_key_env}, which is not set in this environment")
    return found


def server_version(base_url: str) -> str:
    """The server's version where its /version says it (vLLM, SGLang); '' where it does not."""
    parsed = urlparse(base_url)
    try:
        with urllib.request.urlopen(f"{parsed.scheme}://{parsed.netloc}/version", timeout=5) as response:
            found = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError):
        return ""
    return str(found.get("version", "")) if isinstance(found, dict) else ""


def identity(endpoint: Endpoint, base_url: str, model: str, listed: list[str], version: str) -> str:
    """'127.0.0.1:8000 · Qwen/Qwen3-8B · server 0.11.0': where the work was done, by which served model and server.
    A started server's port changes with every pass, so its host is named as served here."""
    host = "served by the pass" if endpoint.serve and not endpoint.base_url else urlparse(base_url).netloc
    if listed and model not in listed:
        raise GpucostError(f"endpoint.model {model!r} is not among the models the server lists: {', '.join(listed)}")
    return " · ".join(part for part in (host, model, f"server {version}" if version else "") if part)


def connect(endpoint: Endpoint, folder: Path, workdir: Path) -> Client:
    """The endpoint ready to answer: its server started when the variant declares one (in the pass's load, so its
    start-up is load_s), the served model checked against the server's list, the endpoint's identity read."""
    import openai

    api_key = key(endpoint)
    server, base_url = None, endpoint.url
    if endpoint.serve:
        server, base_url = serving.start(endpoint.serve, str(folder), endpoint.url, workdir / "server.log",
                                         endpoint.serve_timeout_s)
        atexit.register(server.stop)
    model = endpoint.model.replace(MODEL, str(folder))
    with openai.OpenAI(base_url=base_url, api_key=api_key, timeout=endpoint.timeout_s,
                       max_retries=endpoint.max_retries) as listing:
        listed = [found.id for found in listing.models.list()]
    arguments = {"base_url": base_url, "api_key": api_key, "timeout": endpoint.timeout_s,
                 "max_retries": endpoint.max_retries}
    return Client(arguments, model, endpoint, identity(endpoint, base_url, model, listed, server_version(base_url)),
                  server)


def sent(client: Client, ask: Callable[[object, object], Awaitable], requests: Sequence) -> list:
    """Every request `ask(api, request)` made at the declared concurrency through one async client opened in this
    event loop; answers in the requests' order, a request's exception in place of its answer."""
    return asyncio.run(_gathered(client, ask, requests))


async def _gathered(client: Client, ask: Callable[[object, object], Awaitable], requests: Sequence) -> list:
    import openai

    gate = asyncio.Semaphore(client.endpoint.concurrency)

    async def one(api, request):
        async with gate:
            return await ask(api, request)

    async with openai.AsyncOpenAI(**client.arguments) as api:
        return await asyncio.gather(*(one(api, request) for request in requests), return_exceptions=True)


def measured(client: Client, metrics: dict, missing: dict) -> dict:
    """A pass's utilisation with what every endpoint pass adds: its identity and failed inputs as tags, the started
    server's start-up, no FLOP count (the server's numerics and batching are its own) and no conversion."""
    tags = {ENDPOINT_TAG: client.identity}
    if client.failed:
        tags[ENDPOINT_FAILED_TAG] = f"{len(client.failed)}: {client.failed[0]}"
    if client.server is not None:
        metrics = {**metrics, SERVER_START_S: client.server.started_s}
    missing = {**missing, CONVERT_S: "the endpoint's server loads its model itself",
               **{flop: NOT_COUNTED for flop in FLOP_KEYS}}
    return {"metrics": metrics, "missing_measurements": missing, "tags": tags}


def memory(client: Client, device) -> dict:
    """A started server's peak resident set (it holds the model, not this process); none for a remote server."""
    found = client.server.peak_rss_bytes() if client.server is not None and device.type == "cpu" else None
    if found is None:
        return {"metrics": {}, "counter": "none: the endpoint's server holds the model outside this process"}
    return {"metrics": {"mem_peak_rss_bytes": found}, "counter": "the started server's peak RSS (/proc VmHWM)"}
