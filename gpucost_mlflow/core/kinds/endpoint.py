"""An OpenAI-compatible endpoint a variant runs on (`engine: openai`, its `endpoint:` mapping): where it is, which
model it serves, how hard it is pushed, and the server a pass starts itself when it declares one.

A pass sends the corpus to the endpoint through the official `openai` client at the declared concurrency, timed by
the same clock as every pass. `serve` is the command that starts the server on the rented machine (`vllm serve
{model} --port {port}`, SGLang, `transformers serve`): the pass starts it, waits for its `/health`, counts its
start-up in load, and stops it. The API key is read from the environment variable `api_key_env` names, never from
the file: only the variable's name is recorded. Pure: no openai, no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from urllib.parse import urlparse

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.records import Record

MODEL = "{model}"  # in serve and model: the variant's model folder (a GGUF file's dequantised folder)
PORT = "{port}"  # in serve and base_url: the port the pass picks for the server it starts
SERVED_URL = f"http://127.0.0.1:{PORT}/v1"  # where a started server answers unless base_url says otherwise
NO_KEY = "not-needed"  # what the client sends to a server that asks for no key (a local one)


@dataclass(frozen=True)
class Endpoint(Record):
    """One endpoint as a variant declares it."""

    model: str = MODEL  # the served model's id, as the server's /v1/models lists it
    base_url: str = ""  # http(s)://host:port/v1; '' with serve: SERVED_URL
    api: str = "chat"  # which of the OpenAI API's routes: each kind declares those it sends (Kind.endpoint_apis)
    concurrency: int = 1  # requests in flight at once
    timeout_s: float = 60.0  # per request, the client's own timeout
    max_retries: int = 2  # the client's own retries of a failed request (connection errors, 429, 5xx)
    api_key_env: str = ""  # the environment variable holding the key ('' for a server that needs none)
    serve: str = ""  # the command starting the server on this machine ('' for a server already running)
    serve_timeout_s: float = 300.0  # how long the started server may take to answer /health

    @property
    def url(self) -> str:
        """The base URL requests go to (with {port} where the pass picks it)."""
        return self.base_url or SERVED_URL

    @property
    def host(self) -> str:
        """The host and port requests go to: part of the configuration's identity."""
        return urlparse(self.url).netloc

    @classmethod
    def from_record(cls, record: Mapping) -> Endpoint:
        """An endpoint read back (its recorded form: every field, the key's variable by name only), checked as a
        variants file's is."""
        return parse(dict(record), "endpoint")


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "[::1]")
REMOTE = "endpoint "  # what starts the device name of a pass whose work a server elsewhere did


def is_remote(device: str) -> bool:
    """Whether a configuration's device is a server elsewhere ('endpoint api.example.com'), not a machine measured
    here."""
    return device.startswith(REMOTE)


def remote_device(found: Endpoint | None) -> str:
    """The device a pass through a server elsewhere ran on, as its runs and the catalog's rows name it ('endpoint
    api.example.com'); '' for a server the pass starts or one on this machine, whose work this machine's device does."""
    if found is None or found.serve:
        return ""
    host = urlparse(found.url).hostname or ""
    return "" if host in LOCAL_HOSTS else f"{REMOTE}{host}"


def parse(value: object, where: str) -> Endpoint:
    """The `endpoint:` mapping checked, every error one line naming the field."""
    if isinstance(value, Endpoint):
        return value
    if not isinstance(value, dict):
        raise GpucostError(f"{where}: endpoint must be a mapping (base_url, model, concurrency, ...)")
    known = {f.name for f in fields(Endpoint)}
    unknown = sorted(set(map(str, value)) - known)
    if unknown:
        raise GpucostError(f"{where}: endpoint has unknown field(s) {', '.join(unknown)} (allowed: "
                           f"{', '.join(sorted(known))})")
    found = Endpoint(**value)
    for name in ("model", "base_url", "api_key_env", "serve"):
        if not isinstance(getattr(found, name), str):
            raise GpucostError(f"{where}: endpoint.{name} must be text")
    if not found.model.strip():
        raise GpucostError(f"{where}: endpoint.model names the served model (its id in the server's /v1/models)")
    if not found.base_url and not found.serve:
        raise GpucostError(f"{where}: endpoint needs base_url (a running server) or serve (the command starting one)")
    if found.base_url and urlparse(found.base_url.replace(PORT, "1")).scheme not in ("http", "https"):
        raise GpucostError(f"{where}: endpoint.base_url {found.base_url!r} is not an http(s) URL")
    if found.serve and PORT not in found.serve:
        raise GpucostError(f"{where}: endpoint.serve must place the server on {PORT} (the port the pass picks)")
    if not isinstance(found.api, str) or not found.api:
        raise GpucostError(f"{where}: endpoint.api names the API the workload sends (its kind's endpoint_apis)")
    for name, low in (("concurrency", 1), ("max_retries", 0)):
        number = getattr(found, name)
        if isinstance(number, bool) or not isinstance(number, int) or number < low:
            raise GpucostError(f"{where}: endpoint.{name} must be a whole number >= {low}, not {number!r}")
    for name in ("timeout_s", "serve_timeout_s"):
        number = getattr(found, name)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number <= 0:
            raise GpucostError(f"{where}: endpoint.{name} must be a number of seconds > 0, not {number!r}")
    if found.api_key_env and not found.api_key_env.replace("_", "").isalnum():
        raise GpucostError(f"{where}: endpoint.api_key_env names an environment variable (OPENAI_API_KEY), not its "
                           "value: a key is never written in a variants file")
    return found
