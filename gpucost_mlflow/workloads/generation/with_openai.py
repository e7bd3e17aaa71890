"""Generation through an OpenAI-compatible endpoint (`engine: openai`): the same prompts, new-token budget, greedy
decoding, export and judging as on torch (child.py), the work done by the endpoint's server.

The corpus goes out through the official `openai` client (async, its own retries and timeout) at the declared
concurrency, inside the pass's measured clock; the warm-up sends the same requests for the tuning inputs. A protocol
whose prompt is wrapped in the chat template goes to chat completions (the server applies the model's template to
the one user message, as torch's path does), any prompt may go to completions (the template applied here). Token
counts are the responses' `usage`; each answer's token ids, for the token agreement with the reference, are its text
tokenized by the model's own tokenizer, its end token added when the server stopped on it. A request that fails after
the client's retries leaves its input without an output: coverage counts it, nothing is dropped in silence.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import time
import urllib.request
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import urlparse

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.endpoint import MODEL, NO_KEY, Endpoint
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.names import (
    CONVERT_S,
    DECODE_S,
    ENDPOINT_FAILED_TAG,
    ENDPOINT_TAG,
    OUTPUT_TOKENS_PER_S,
    PREFILL_S,
    SERVER_START_S,
    TOKENS_GENERATED,
    TOKENS_PROMPT,
)
from gpucost_mlflow.execution import serving
from gpucost_mlflow.workloads.generation import child
from gpucost_mlflow.workloads.generation.task import GenerationSettings
from gpucost_mlflow.workloads.generation.with_ctranslate2 import _end_tokens

CACHED = False  # nothing is exported or converted here: the server loads its model itself
NOT_SPLIT = "an endpoint returns whole answers: prefill and decode are not timed apart"


def options(settings: Settings, device_type: str) -> dict:
    """What the manifest records of the endpoint: everything declared, the key's variable by name only."""
    return {"api": f"openai {settings.endpoint.api}", **settings.endpoint.record(), "sampling": "greedy (temperature 0)"}


@dataclass
class Client:
    """The endpoint as a pass talks to it: the client's arguments, the model id, what it was declared with, its
    server. Each pass of requests opens its own async client in its own event loop and closes it."""

    arguments: dict
    model: str
    endpoint: Endpoint
    identity: str
    server: serving.Server | None = None
    failed: list[str] = field(default_factory=list)


def _key(endpoint: Endpoint) -> str:
    """The API key from the variable the variant names; a local server's placeholder when it names none."""
    if not endpoint.api_key_env:
        return NO_KEY
    key = os.environ.get(endpoint.api_key_env, "")
    if not key:
        raise GpucostError(f"endpoint.api_key_env names {endpoint.api_key_env}, which is not set in this environment")
    return key


def _server_version(base_url: str) -> str:
    """The server's version where its /version says it (vLLM, SGLang); '' where it does not."""
    parsed = urlparse(base_url)
    try:
        with urllib.request.urlopen(f"{parsed.scheme}://{parsed.netloc}/version", timeout=5) as response:
            import json

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


def load(spec, device) -> Work:
    """The endpoint ready to answer: its server started when the variant declares one, the client, the harness
    tokenizer (the prompts are cut and the answers' tokens counted by the model's own)."""
    import openai

    from gpucost_mlflow.execution import models  # deferred: imports torch

    extra, settings = spec.workload_settings, spec.settings
    endpoint = settings.endpoint
    generation = GenerationSettings.from_record(extra["generation"])
    if endpoint.api == "embeddings":
        raise GpucostError("endpoint.api embeddings is for the embeddings workload; generation uses chat or completions")
    if endpoint.api == "chat" and not generation.chat_template:
        raise GpucostError("endpoint.api chat wraps every prompt in the server's chat template, but the protocol's "
                           "generation.chat_template is false: use api completions")
    gguf = extra.get("gguf") or {}
    folder = (child.dequantised(Path(gguf["path"]), gguf["sha256"], Path(extra["cache"])) if gguf
              else Path(spec.model_path))
    tokenizer = models.load_tokenizer(folder)
    key = _key(endpoint)
    server, base_url = None, endpoint.url
    if endpoint.serve:
        server, base_url = serving.start(endpoint.serve, str(folder), endpoint.url, Path(spec.workdir) / "server.log",
                                         endpoint.serve_timeout_s)
        atexit.register(server.stop)
    model = endpoint.model.replace(MODEL, str(folder))
    with openai.OpenAI(base_url=base_url, api_key=key, timeout=endpoint.timeout_s,
                       max_retries=endpoint.max_retries) as listing:
        listed = [found.id for found in listing.models.list()]
    arguments = {"base_url": base_url, "api_key": key, "timeout": endpoint.timeout_s,
                 "max_retries": endpoint.max_retries}
    client = Client(arguments, model, endpoint, identity(endpoint, base_url, model, listed, _server_version(base_url)),
                    server)
    ends = _end_tokens(folder, tokenizer)
    return Work(tokenizer, client, partial(process, prompting=child.Prompting(generation, extra.get("labels", []), ends)),
                partial(_utilisation, client), child.export, memory=partial(_memory, client), empty=child.Generated)


async def _ask(api, model: str, prompt: str, max_tokens: int, chat: bool, gate: asyncio.Semaphore):
    """One request (the client retries it as declared); its text, why it ended, its usage and its latency."""
    async with gate:
        started = time.perf_counter()
        if chat:
            response = await api.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0)
            text = response.choices[0].message.content or ""
        else:
            response = await api.completions.create(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0)
            text = response.choices[0].text or ""
        return text, response.choices[0].finish_reason, response.usage, time.perf_counter() - started


async def _all(client: Client, prompts: list[str], max_tokens: int, chat: bool) -> list:
    """Every prompt at the declared concurrency through one async client opened in this event loop."""
    import openai

    gate = asyncio.Semaphore(client.endpoint.concurrency)
    async with openai.AsyncOpenAI(**client.arguments) as api:
        return await asyncio.gather(*(_ask(api, client.model, prompt, max_tokens, chat, gate) for prompt in prompts),
                                    return_exceptions=True)


def process(ids, texts, tokenizer, client: Client, settings, device, on_batch=None, *,
            prompting: child.Prompting) -> child.Generated:
    """Every prompt sent at the declared concurrency, the answers kept in input order; an input whose request failed
    after the retries gets no output (coverage counts it) and its error is kept for the pass's tag."""
    generation = prompting.generation
    chat = client.endpoint.api == "chat"
    # chat: the rendered prompt is the user message and the server applies the chat template; completions: the
    # template, when the protocol asks for it, is applied here, as torch's path does before tokenizing.
    prompts = child.prompts_of(texts, tokenizer, settings.max_length,
                               GenerationSettings(generation.prompt, generation.max_new_tokens, False,
                                                  generation.answer) if chat else generation, prompting.labels)
    if on_batch is not None:
        on_batch(1, 0)
    answers = asyncio.run(_all(client, prompts, generation.max_new_tokens, chat))
    done = child.Generated()
    ends = list(prompting.ends)
    for index, answer in enumerate(answers):
        if isinstance(answer, BaseException):
            client.failed.append(f"{ids[index]}: {type(answer).__name__}: {str(answer)[:200]}")
            continue
        text, finish, usage, latency = answer
        new = tokenizer(text, add_special_tokens=False)["input_ids"] + (ends[:1] if finish == "stop" and ends else [])
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        done.ids.append(ids[index])
        done.texts.append(text)
        done.tokens.append(new)
        done.shapes.append(([int(prompt_tokens or 0)], [int(getattr(usage, "completion_tokens", None) or len(new))]))
        done.prefill_s.append(latency)
        done.decode_s.append(0.0)
    return done


def _utilisation(client: Client, outputs, pass_s: float | None) -> dict:
    """Token counts from the responses' usage and output tokens per second; the endpoint's identity and failed
    requests as tags; no FLOP count (the server's numerics and batching are its own) and no prefill / decode split."""
    tags = {ENDPOINT_TAG: client.identity}
    if client.failed:
        tags[ENDPOINT_FAILED_TAG] = f"{len(client.failed)}: {client.failed[0]}"
    metrics = {}
    if pass_s is not None:
        shapes = list(getattr(outputs, "shapes", []))
        generated = float(sum(sum(answers) for _, answers in shapes))
        metrics = {TOKENS_PROMPT: float(sum(sum(prompts) for prompts, _ in shapes)), TOKENS_GENERATED: generated}
        if pass_s > 0:
            metrics[OUTPUT_TOKENS_PER_S] = generated / pass_s
    if client.server is not None:
        metrics[SERVER_START_S] = client.server.started_s
    missing = {PREFILL_S: NOT_SPLIT, DECODE_S: NOT_SPLIT, CONVERT_S: "the endpoint's server loads its model itself"}
    missing.update({key: "the endpoint's server does the work: its FLOPs are not counted here"
                    for key in child.FLOP_KEYS})
    if pass_s is None:
        missing.update({key: "pass did not complete" for key in (TOKENS_PROMPT, TOKENS_GENERATED)})
    return {"metrics": metrics, "missing_measurements": missing, "tags": tags}


def _memory(client: Client, device) -> dict:
    """A started server's peak resident set (it holds the model, not this process); none for a remote server."""
    found = client.server.peak_rss_bytes() if client.server is not None and device.type == "cpu" else None
    if found is None:
        return {"metrics": {}, "counter": "none: the endpoint's server holds the model outside this process"}
    return {"metrics": {"mem_peak_rss_bytes": found}, "counter": "the started server's peak RSS (/proc VmHWM)"}
