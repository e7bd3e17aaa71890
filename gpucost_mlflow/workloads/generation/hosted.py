"""Generation's side of a hosted API's batch tier (flow/hosted.py asks it through the registry): the prompts a live
endpoint pass sends, the Batch API's input lines for them, and the provider's answers as a pass's outcome.

The prompts are the protocol's template cut at max_length by the model's own tokenizer, as `with_openai.py` sends
them; each answer's token ids are its text tokenized by that tokenizer, its end token added when the provider stopped
on it, as a live pass counts them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.judging.status import Status
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
from gpucost_mlflow.execution.outcome import Counted, PassOutcome, Timings
from gpucost_mlflow.workloads.generation import batch_api, child
from gpucost_mlflow.workloads.generation.output import GENERATIONS, write_generations
from gpucost_mlflow.workloads.generation.task import GenerationSettings
from gpucost_mlflow.workloads.generation.with_ctranslate2 import _end_tokens

BATCH_WORK = "a batch job: the provider loads, warms and schedules its model within its completion window"
NOT_SPLIT = "a batch job returns whole answers: prefill and decode are not timed apart"


class Asked:
    """The batch's inputs as a live endpoint pass would send them: ids, prompts, the tokenizer and end tokens."""

    def __init__(self, settings, workload, model_path: Path, rows: list[dict]):
        from gpucost_mlflow.execution import models  # deferred: imports torch

        endpoint = settings.endpoint
        if endpoint.api not in batch_api.URLS:
            raise GpucostError(f"endpoint.api {endpoint.api}: a generation batch asks chat or completions")
        generation, folder = workload.generation, child.model_folder(workload, model_path)
        self.tokenizer = models.load_tokenizer(folder)
        self.ends = sorted(_end_tokens(folder, self.tokenizer))
        chat = endpoint.api == "chat"
        if chat and not generation.chat_template:
            raise GpucostError("endpoint.api chat wraps every prompt in the server's chat template, but the protocol's "
                               "generation.chat_template is false: use api completions")
        asked = GenerationSettings(generation.prompt, generation.max_new_tokens, False, generation.answer) if chat \
            else generation
        self.ids = [row["id"] for row in rows]
        self.prompts = child.prompts_of([row["text"] for row in rows], self.tokenizer, settings.max_length, asked,
                                        workload.labels)
        self.max_tokens, self.endpoint = generation.max_new_tokens, endpoint

    def lines(self) -> list[dict]:
        """The Batch API's input lines for these prompts."""
        return batch_api.request_lines(self.ids, self.prompts, self.endpoint.model, self.max_tokens, self.endpoint.api)

    def read(self, results: Path) -> batch_api.Returned:
        """The provider's output file for these inputs, read whole (a malformed one refused in one line)."""
        return batch_api.read_results(results, self.ids)

    def outcome(self, returned: batch_api.Returned, completed_in_h: float) -> Callable[[Path], PassOutcome]:
        """The pass's outcome from the provider's answers: the export written into the work folder, pass_s the
        hours the batch took, the tokens its usage, an input it did not answer left without an output."""

        def written(workdir: Path) -> PassOutcome:
            ids = [ident for ident in self.ids if ident in returned.answers]
            texts = [returned.answers[ident][0] for ident in ids]
            tokens = [self.tokenizer(text, add_special_tokens=False)["input_ids"]
                      + (self.ends[:1] if returned.answers[ident][1] == "stop" else [])
                      for ident, text in zip(ids, texts)]
            write_generations(workdir / GENERATIONS, ids, texts, tokens)
            usage = [returned.answers[ident][2] for ident in ids]
            pass_s = completed_in_h * 3600
            generated = float(sum(int(u.get("completion_tokens") or 0) for u in usage))
            tags = {ENDPOINT_TAG: f"{self.endpoint.host} · {self.endpoint.model} · batch tier"}
            if returned.errors:
                first = next(iter(returned.errors.items()))
                tags[ENDPOINT_FAILED_TAG] = f"{len(returned.errors)}: {first[0]}: {first[1]}"
            return PassOutcome(status=Status.COMPLETED, timings=Timings(pass_s=pass_s), measured=Counted(
                completed_entries=len(ids),
                metrics={TOKENS_PROMPT: float(sum(int(u.get("prompt_tokens") or 0) for u in usage)),
                         TOKENS_GENERATED: generated, OUTPUT_TOKENS_PER_S: generated / pass_s},
                missing_measurements={LOAD_S: BATCH_WORK, WARMUP_S: BATCH_WORK, PREFILL_S: NOT_SPLIT,
                                      DECODE_S: NOT_SPLIT},
                memory_counter="none: the provider's machines hold the model", tags=tags))

        return written
