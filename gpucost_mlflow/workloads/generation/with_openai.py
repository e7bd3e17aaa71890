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

import time
from functools import partial
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.names import (
    DECODE_S,
    OUTPUT_TOKENS_PER_S,
    PREFILL_S,
    TOKENS_GENERATED,
    TOKENS_PROMPT,
)
from gpucost_mlflow.workloads import endpoint_client
from gpucost_mlflow.workloads.endpoint_client import Client
from gpucost_mlflow.workloads.generation import child
from gpucost_mlflow.workloads.generation.task import GenerationSettings
from gpucost_mlflow.workloads.generation.with_ctranslate2 import _end_tokens

CACHED = False  # nothing is exported or converted here: the server loads its model itself
NOT_SPLIT = "an endpoint returns whole answers: prefill and decode are not timed apart"


def options(settings: Settings, device_type: str) -> endpoint_client.EngineOptions:
    """What the manifest records of the endpoint: everything declared, the key's variable by name only."""
    return endpoint_client.options(settings, sampling="greedy (temperature 0)")


def load(spec, device) -> Work:
    """The endpoint ready to answer: its server started when the variant declares one, the client, the harness
    tokenizer (the prompts are cut and the answers' tokens counted by the model's own)."""
    from gpucost_mlflow.execution import models  # deferred: imports torch

    workload, settings = spec.workload, spec.settings
    endpoint = settings.endpoint
    generation = workload.generation
    if endpoint.api == "embeddings":
        raise GpucostError("endpoint.api embeddings is for the embeddings workload; generation uses chat or "
                           "completions")
    if endpoint.api == "chat" and not generation.chat_template:
        raise GpucostError("endpoint.api chat wraps every prompt in the server's chat template, but the protocol's "
                           "generation.chat_template is false: use api completions")
    folder = child.model_folder(workload, spec.model_path)
    tokenizer = models.load_tokenizer(folder)
    client = endpoint_client.connect(endpoint, folder, Path(spec.workdir))
    ends = _end_tokens(folder, tokenizer)
    return Work(tokenizer, client, partial(process, prompting=child.Prompting(generation, workload.labels, ends)),
                partial(_utilisation, client), child.export, memory=partial(endpoint_client.memory, client),
                empty=child.Generated)


async def _ask(api, prompt: str, *, model: str, max_tokens: int, chat: bool):
    """One request (the client retries it as declared); its text, why it ended, its usage and its latency."""
    started = time.perf_counter()
    if chat:
        response = await api.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0)
        text = response.choices[0].message.content or ""
    else:
        response = await api.completions.create(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0)
        text = response.choices[0].text or ""
    return text, response.choices[0].finish_reason, response.usage, time.perf_counter() - started


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
    answers = endpoint_client.sent(client, partial(_ask, model=client.model, max_tokens=generation.max_new_tokens,
                                                   chat=chat), prompts)
    done = child.Generated()
    ends = list(prompting.ends)
    for index, answer in enumerate(answers):
        if isinstance(answer, BaseException):
            client.fail(ids[index], answer)
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
    """Token counts from the responses' usage and output tokens per second, with what every endpoint pass records
    (endpoint_client.measured); no prefill / decode split."""
    metrics = {}
    if pass_s is not None:
        shapes = list(getattr(outputs, "shapes", []))
        generated = float(sum(sum(answers) for _, answers in shapes))
        metrics = {TOKENS_PROMPT: float(sum(sum(prompts) for prompts, _ in shapes)), TOKENS_GENERATED: generated}
        if pass_s > 0:
            metrics[OUTPUT_TOKENS_PER_S] = generated / pass_s
    missing = {PREFILL_S: NOT_SPLIT, DECODE_S: NOT_SPLIT}
    if pass_s is None:
        missing.update({key: "pass did not complete" for key in (TOKENS_PROMPT, TOKENS_GENERATED)})
    return endpoint_client.measured(client, metrics, missing)
