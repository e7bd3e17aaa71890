"""A hosted API's batch tier as a pass (`gpucost hosted batch-file`, `batch-import`): the OpenAI Batch API input file
written for the corpus, then the provider's output judged and recorded as a pass of the variant, timed by how long the
batch took.

The prompts are the ones a live pass through `engine: openai` sends (the protocol's template, cut at max_length by the
model's own tokenizer), and the answers go through the same export, checks and reference comparison as every pass.
The results file is read whole before any run opens: a malformed one records nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds.endpoint import remote_device
from gpucost_mlflow.core.names import (
    DECODE_S,
    ENDPOINT_FAILED_TAG,
    ENDPOINT_TAG,
    LOAD_S,
    OUTPUT_TOKENS_PER_S,
    PREFILL_S,
    TOKENS_GENERATED,
    TOKENS_PROMPT,
    WARMUP_S,
)
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow import launcher
from gpucost_mlflow.flow.preparation import PassRequest, prepare
from gpucost_mlflow.workloads.generation import batch_api, child
from gpucost_mlflow.workloads.generation.output import GENERATIONS, write_generations
from gpucost_mlflow.workloads.generation.task import GenerationSettings
from gpucost_mlflow.workloads.generation.with_ctranslate2 import _end_tokens

BATCH_WORK = "a batch job: the provider loads, warms and schedules its model within its completion window"
NOT_SPLIT = "a batch job returns whole answers: prefill and decode are not timed apart"


class _Asked:
    """The batch's inputs as a live endpoint pass would send them: ids, prompts, the tokenizer and end tokens."""

    def __init__(self, request: PassRequest):
        from gpucost_mlflow.execution import models  # deferred: imports torch

        settings = request.variant.settings
        endpoint = settings.endpoint
        if settings.workload != "generation" or endpoint is None or endpoint.api not in batch_api.URLS:
            raise GpucostError(f"variant '{request.variant.name}' is not a generation variant on engine openai with "
                               "endpoint.api chat or completions: a batch file asks such an endpoint")
        if endpoint.serve or not remote_device(endpoint):
            raise GpucostError(f"variant '{request.variant.name}' starts or names a server on this machine: a batch "
                               "tier is a hosted API's (endpoint.base_url on its host)")
        prepared = prepare(request)
        workload = prepared.manifest["workload"]
        generation = GenerationSettings.from_record(workload["generation"])
        gguf = workload.get("gguf") or {}
        folder = (child.dequantised(Path(gguf["path"]), gguf["sha256"], Path(workload["cache"])) if gguf
                  else request.model_path)
        self.tokenizer = models.load_tokenizer(folder)
        self.ends = sorted(_end_tokens(folder, self.tokenizer))
        chat = endpoint.api == "chat"
        if chat and not generation.chat_template:
            raise GpucostError("endpoint.api chat wraps every prompt in the server's chat template, but the protocol's "
                               "generation.chat_template is false: use api completions")
        asked = GenerationSettings(generation.prompt, generation.max_new_tokens, False, generation.answer) if chat \
            else generation
        rows = prepared.corpus.rows
        self.ids = [row["id"] for row in rows]
        self.prompts = child.prompts_of([row["text"] for row in rows], self.tokenizer, settings.max_length, asked,
                                        workload.get("labels", []))
        self.max_tokens, self.endpoint = generation.max_new_tokens, endpoint


def batch_file(request: PassRequest, out: Path) -> int:
    """Write the Batch API input file for the corpus; the number of requests in it."""
    asked = _Asked(request)
    lines = batch_api.request_lines(asked.ids, asked.prompts, asked.endpoint.model, asked.max_tokens,
                                    asked.endpoint.api)
    write_atomic(out, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8"))
    return len(lines)


def import_batch(request: PassRequest, results: Path, completed_in_h: float) -> launcher.PassResult:
    """Judge and record the provider's output as a pass of the variant: pass_s is how long the batch took, the
    tokens its usage, an input it did not answer a missing output (coverage counts it)."""
    if not completed_in_h > 0:
        raise GpucostError(f"--completed-in {completed_in_h:g}: the hours the batch took, > 0")
    asked = _Asked(request)
    returned = batch_api.read_results(results, asked.ids)
    if not returned.answers:
        raise GpucostError(f"{results}: no answered input (every line an error): nothing to judge")

    def outcome(workdir: Path) -> PassOutcome:
        ids = [ident for ident in asked.ids if ident in returned.answers]
        texts = [returned.answers[ident][0] for ident in ids]
        tokens = [asked.tokenizer(text, add_special_tokens=False)["input_ids"]
                  + (asked.ends[:1] if returned.answers[ident][1] == "stop" else []) for ident, text in zip(ids, texts)]
        write_generations(workdir / GENERATIONS, ids, texts, tokens)
        usage = [returned.answers[ident][2] for ident in ids]
        pass_s = completed_in_h * 3600
        generated = float(sum(int(u.get("completion_tokens") or 0) for u in usage))
        tags = {ENDPOINT_TAG: f"{asked.endpoint.host} · {asked.endpoint.model} · batch tier"}
        if returned.errors:
            first = next(iter(returned.errors.items()))
            tags[ENDPOINT_FAILED_TAG] = f"{len(returned.errors)}: {first[0]}: {first[1]}"
        return PassOutcome(
            status=Status.COMPLETED, completed_entries=len(ids), pass_s=pass_s,
            metrics={TOKENS_PROMPT: float(sum(int(u.get("prompt_tokens") or 0) for u in usage)),
                     TOKENS_GENERATED: generated, OUTPUT_TOKENS_PER_S: generated / pass_s},
            missing_measurements={LOAD_S: BATCH_WORK, WARMUP_S: BATCH_WORK, PREFILL_S: NOT_SPLIT,
                                  DECODE_S: NOT_SPLIT},
            memory_counter="none: the provider's machines hold the model", tags=tags)

    return launcher.execute(PassRequest(**{**request.__dict__, "imported": outcome}))
