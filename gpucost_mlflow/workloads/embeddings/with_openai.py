"""Sentence embeddings through an OpenAI-compatible endpoint (`engine: openai`, `endpoint.api: embeddings`): the same
inputs, cut, batches, export and judging as on torch (child.py), the encoder run by the endpoint's server.

Each request carries one harness batch: the variant's `batch_size` inputs, in the order and length grouping the torch
path batches them, sent to `/v1/embeddings` through the official `openai` client (async, its own retries and timeout)
with `concurrency` requests in flight, inside the pass's measured clock. Batches rather than one input per request keep
the timing honest: `batch_size` is part of the configuration, so it must change the work measured (an API client
embedding a corpus sends batches, and a server's cost per input depends on them), and two variants differing only in
it are then two real configurations rather than one measured twice. Each text is cut at max_length tokens of the
model's own tokenizer, special tokens counted, as the torch path truncates, so the server reads what torch read. The
input tokens are the responses' `usage.prompt_tokens`. A request that fails after the client's retries leaves its
batch's inputs without an output: coverage counts them, nothing is dropped in silence.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.names import TOKENS_INPUT
from gpucost_mlflow.execution.batching import tokenized
from gpucost_mlflow.workloads import endpoint_client
from gpucost_mlflow.workloads.embeddings import KIND, child
from gpucost_mlflow.workloads.endpoint_client import Client

CACHED = False  # nothing is exported or converted here: the server loads its model itself
NO_USAGE = "the endpoint reported no usage for some request"


@dataclass
class Served(child.Embedded):
    """Embeddings as the endpoint returned them, with the input tokens its responses' usage reported (None when a
    response reported none)."""

    usage_tokens: int | None = 0


def options(settings: Settings, device_type: str) -> endpoint_client.EngineOptions:
    """What the manifest records of the endpoint (everything declared, the key's variable by name only) and what each
    request carries."""
    return endpoint_client.options(settings, inputs_per_request=settings.batch_size)


def load(spec, device) -> Work:
    """The endpoint ready to embed: its server started when the variant declares one, the client, the harness
    tokenizer (the texts are cut and batched by the model's own)."""
    from gpucost_mlflow.execution import models  # deferred: imports torch

    endpoint, path = spec.settings.endpoint, Path(spec.model_path)
    if endpoint.api not in KIND.endpoint_apis:
        raise GpucostError(f"endpoint.api {endpoint.api} is for generation; the embeddings workload sends api "
                           f"{' or '.join(KIND.endpoint_apis)}")
    tokenizer = models.load_tokenizer(path)
    client = endpoint_client.connect(endpoint, path, Path(spec.workdir))
    return Work(tokenizer, client, process, partial(_utilisation, client), child.export,
                memory=partial(endpoint_client.memory, client), empty=Served)


def cut(texts: list[str], tokenizer, max_length: int) -> list[str]:
    """Each text as the torch path reads it: one longer than max_length tokens (special tokens counted) ends after the
    last token the harness keeps, so the server's tokenizer reads the same tokens."""
    whole = tokenizer(texts, return_attention_mask=False, return_token_type_ids=False)["input_ids"]
    kept = tokenizer(texts, truncation=True, max_length=max_length, return_attention_mask=False,
                     return_token_type_ids=False, return_offsets_mapping=tokenizer.is_fast)
    if not tokenizer.is_fast:
        return [text if len(ids) <= max_length else tokenizer.decode(short, skip_special_tokens=True)
                for text, ids, short in zip(texts, whole, kept["input_ids"])]
    return [text if len(ids) <= max_length else text[: max(end for _, end in offsets)]
            for text, ids, offsets in zip(texts, whole, kept["offset_mapping"])]


async def _embed(api, texts: list[str], *, model: str) -> tuple[list[list[float]], object]:
    """One request of a batch of texts (the client retries it as declared): their vectors in input order, its usage."""
    response = await api.embeddings.create(model=model, input=texts, encoding_format="float")
    vectors = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
    if len(vectors) != len(texts):
        raise ValueError(f"the endpoint returned {len(vectors)} embeddings for {len(texts)} inputs")
    return vectors, response.usage


def process(ids, texts, tokenizer, client: Client, settings, device, on_batch=None) -> Served:
    """Every harness batch sent as one request at the declared concurrency, the vectors kept in processing order; the
    inputs of a request that failed after the retries get no output and its error is kept for the pass's tag."""
    import numpy as np

    _, lengths, plan, _ = tokenized(tokenizer, texts, settings)
    inputs = cut(texts, tokenizer, settings.max_length)
    if on_batch is not None:
        on_batch(1, 0)
    answers = endpoint_client.sent(client, partial(_embed, model=client.model),
                                   [[inputs[i] for i in batch] for batch in plan])
    rows, kept, tokens = [], [], 0
    for batch, answer in zip(plan, answers):
        if isinstance(answer, BaseException):
            for index in batch:
                client.fail(ids[index], answer)
            continue
        vectors, usage = answer
        rows.extend(vectors)
        kept.append(batch)
        used = getattr(usage, "prompt_tokens", None)
        tokens = None if used is None or tokens is None else tokens + int(used)
    if not rows:
        return Served(usage_tokens=tokens)
    return Served([ids[i] for batch in kept for i in batch], np.asarray(rows, dtype=np.float32), lengths, kept, tokens)


def _utilisation(client: Client, outputs, pass_s: float | None) -> dict:
    """The input tokens from the responses' usage, with what every endpoint pass records (endpoint_client.measured)."""
    tokens = getattr(outputs, "usage_tokens", None)
    if pass_s is None:
        return endpoint_client.measured(client, {}, {TOKENS_INPUT: "pass did not complete"})
    if tokens is None:
        return endpoint_client.measured(client, {}, {TOKENS_INPUT: NO_USAGE})
    return endpoint_client.measured(client, {TOKENS_INPUT: float(tokens)}, {})
