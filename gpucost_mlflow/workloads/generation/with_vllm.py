"""Built-in greedy generation on vLLM (offline `LLM.generate`, CUDA or ROCm machines): the same prompts, harness
batches, new-token budget, end tokens, FLOP count and export as on torch (child.py).

vLLM loads the transformers folder itself (the GGUF file's dequantised cache, as on torch), so nothing is converted
and nothing is cached. Each harness batch is one `generate` call with temperature 0 (greedy); vLLM returns whole
outputs, so prefill and decode are not timed apart, and the empty cells say so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import EngineOptions
from gpucost_mlflow.core.names import CONVERT_S, DECODE_S, PREFILL_S
from gpucost_mlflow.execution.batching import each_batch
from gpucost_mlflow.workloads.generation import child
from gpucost_mlflow.workloads.generation.with_ctranslate2 import _end_tokens

CACHED = False  # vLLM reads the model folder as it is
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
NOT_SPLIT = "vLLM's offline generate returns whole outputs: prefill and decode are not timed apart"


@dataclass(frozen=True)
class VllmOptions(EngineOptions):
    """How the LLM is built: its dtype, eager or graphs, and the share of GPU memory it may take."""

    api: str = "vllm.LLM.generate (offline)"
    dtype: str = ""
    enforce_eager: bool = False
    gpu_memory_utilization: float = 0.9
    sampling: str = "greedy (temperature 0)"


def options(settings: Settings, device_type: str) -> VllmOptions:
    """The LLM's options for this variant."""
    return VllmOptions(dtype=DTYPES[settings.precision])


def load(spec, device) -> Work:
    """The LLM on the model folder (a GGUF file through its dequantised cache), and the harness tokenizer."""
    import json

    import vllm

    from gpucost_mlflow.execution import memory, models  # deferred: imports torch

    workload, settings = spec.workload, spec.settings
    chosen, generation = VllmOptions.from_record(workload.engine.options), workload.generation
    folder = child.model_folder(workload, spec.model_path)
    tokenizer = models.load_tokenizer(folder)
    llm = vllm.LLM(model=str(folder), tokenizer=str(folder), dtype=chosen.dtype, seed=spec.seed,
                   enforce_eager=chosen.enforce_eager, gpu_memory_utilization=chosen.gpu_memory_utilization)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    ends = _end_tokens(folder, tokenizer)
    return Work(tokenizer, llm, partial(process, prompting=child.Prompting(generation, workload.labels, ends)),
                partial(_utilisation, config, settings, device), child.export,
                memory=partial(memory.outside_torch, "vllm"), empty=child.Generated)


def process(ids, texts, tokenizer, llm, settings, device, on_batch: Callable[[int, int], None] | None = None, *,
            prompting: child.Prompting) -> child.Generated:
    """Prompts, batches in the harness's order, each one greedy `generate` call to the protocol's new-token budget.
    On an exception it raises PassFailure carrying the outputs of the batches finished before."""
    import vllm

    generation, ends = prompting.generation, prompting.ends
    encoded, lengths, plan = child.encoded_prompts(texts, tokenizer, settings, prompting)
    sampling = vllm.SamplingParams(temperature=0.0, max_tokens=generation.max_new_tokens, stop_token_ids=ends or None)
    done = child.Generated()

    def step(batch: list[int]) -> None:
        started = time.perf_counter()
        results = llm.generate([{"prompt_token_ids": encoded[i]} for i in batch], sampling, use_tqdm=False)
        new = [list(result.outputs[0].token_ids) for result in results]
        done.add(tokenizer, [ids[i] for i in batch], [lengths[i] for i in batch], new, time.perf_counter() - started,
                 0.0)

    return each_batch(plan, on_batch, step, lambda failed: done)


def _utilisation(config: dict, settings: Settings, device, outputs, pass_s) -> dict:
    """Tokens and FLOPs as on torch; the prefill / decode split left empty with its reason, and no conversion."""
    result = child.utilisation(config, settings, device, outputs, pass_s)
    metrics = {key: value for key, value in result.get("metrics", {}).items() if key not in (PREFILL_S, DECODE_S)}
    missing = {**result.get("missing_measurements", {}), PREFILL_S: NOT_SPLIT, DECODE_S: NOT_SPLIT,
               CONVERT_S: "vLLM loads the model folder as it is: nothing is converted"}
    return {**result, "metrics": metrics, "missing_measurements": missing}
