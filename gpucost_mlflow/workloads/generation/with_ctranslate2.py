"""Built-in greedy generation on CTranslate2: the same prompts, harness batches, new-token budget, end tokens, FLOP
count and export as on torch (child.py), the decoding run by a CTranslate2 Generator.

The causal LM (the folder, or the GGUF file's dequantised cache) is converted once into the engine cache with its
fp32 weights; the variant's precision and quantization choose the compute type at load (`float32`, `bfloat16`,
`int8`), so one conversion serves every compute type. Each batch is timed to its first new token through the
Generator's step callback (prefill), then to its outputs on the host (decode).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import EngineOptions
from gpucost_mlflow.execution.batching import each_batch
from gpucost_mlflow.workloads import engine_cache
from gpucost_mlflow.workloads.generation import child

KEYED = ("converter", "weights")  # what the conversion depends on; the compute type is chosen at load


def compute_type(settings: Settings) -> str:
    """The variant's precision and quantization as a CTranslate2 compute type."""
    if settings.quantization == "dynamic-int8":
        return "int8"
    return {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}[settings.precision]


@dataclass(frozen=True)
class CTranslate2Options(EngineOptions):
    """The conversion (keyed: converter and weights) and how the Generator runs it (compute type, device)."""

    converter: str = "ctranslate2.converters.TransformersConverter"
    weights: str = "float32 (as converted)"
    compute_type: str = ""
    device: str = ""


def options(settings: Settings, device_type: str) -> CTranslate2Options:
    """The variant's options on this device type; a compute type this CTranslate2 build does not run on the device is
    refused before any run exists."""
    import ctranslate2

    device, chosen = ("cuda" if device_type == "cuda" else "cpu"), compute_type(settings)
    supported = sorted(ctranslate2.get_supported_compute_types(device))
    if chosen not in supported:
        raise GpucostError(f"ctranslate2 {ctranslate2.__version__} does not run compute type {chosen} on {device} "
                           f"(it runs {', '.join(supported)}); choose another precision or device")
    return CTranslate2Options(compute_type=chosen, device=device)


def load(spec, device) -> Work:
    """The model converted (or read from the engine cache), its Generator at the variant's compute type, and the
    harness tokenizer; a GGUF file through its dequantised cache first, as on torch."""
    import ctranslate2

    from gpucost_mlflow.execution import memory, models  # deferred: imports torch

    workload, settings = spec.workload, spec.settings
    record, generation = workload.engine, workload.generation
    folder = child.model_folder(workload, spec.model_path)
    converted, convert_s = _converted(folder, record)
    tokenizer = models.load_tokenizer(folder)
    chosen = CTranslate2Options.from_record(record.options)
    generator = ctranslate2.Generator(str(converted), device=chosen.device, compute_type=chosen.compute_type)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    ends = _end_tokens(folder, tokenizer)
    return Work(tokenizer, generator, partial(process, prompting=child.Prompting(generation, workload.labels, ends)),
                partial(_utilisation, config, settings, device, convert_s), child.export,
                memory=partial(memory.outside_torch, "ctranslate2"), empty=child.Generated)


def _converted(folder: Path, record) -> tuple[Path, float | None]:
    """The converted model in the engine cache, converted first when absent (engine_cache.build_cached)."""
    from ctranslate2.converters import TransformersConverter
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the converter loads the model through transformers: no bar on the terminal

    def build(target: Path) -> None:
        TransformersConverter(str(folder)).convert(str(target / "model"), quantization=None, force=True)
        for item in (target / "model").iterdir():
            item.rename(target / item.name)

    return engine_cache.build_cached(record, build)


def _end_tokens(folder: Path, tokenizer) -> list[int]:
    """The ids that end an answer: the folder's generation config's, else the tokenizer's (as on torch)."""
    declared = None
    config = folder / "generation_config.json"
    if config.exists():
        declared = json.loads(config.read_text(encoding="utf-8")).get("eos_token_id")
    if declared is None:
        declared = tokenizer.eos_token_id
    return sorted(set(declared if isinstance(declared, list) else [declared] if declared is not None else []))


def process(ids, texts, tokenizer, generator, settings, device, on_batch: Callable[[int, int], None] | None = None, *,
            prompting: child.Prompting) -> child.Generated:
    """Prompts, batches in the harness's order, each decoded greedily by the Generator to the protocol's new-token
    budget, its new tokens (end token included) decoded. On an exception it raises PassFailure carrying the outputs
    of the batches finished before."""
    generation, ends = prompting.generation, prompting.ends
    encoded, lengths, plan = child.encoded_prompts(texts, tokenizer, settings, prompting)
    done = child.Generated()

    def step(batch: list[int]) -> None:
        first: list[float] = []

        def first_token(_result) -> bool:
            if not first:
                first.append(time.perf_counter())
            return False

        started = time.perf_counter()
        results = generator.generate_batch(
            [tokenizer.convert_ids_to_tokens(encoded[i]) for i in batch], max_length=generation.max_new_tokens,
            sampling_topk=1, beam_size=1, include_prompt_in_result=False, end_token=ends or None,
            return_end_token=True, callback=first_token)
        new = [list(result.sequences_ids[0]) for result in results]
        ended = time.perf_counter()
        at = first[0] if first else ended
        done.add(tokenizer, [ids[i] for i in batch], [lengths[i] for i in batch], new, at - started, ended - at)

    return each_batch(plan, on_batch, step, lambda failed: done)


def _utilisation(config: dict, settings: Settings, device, convert_s: float | None, outputs, pass_s) -> dict:
    """Tokens, the prefill / decode split and the FLOPs with the KV cache as on torch, and the conversion's seconds
    when it ran in this pass."""
    return engine_cache.with_conversion(child.utilisation(config, settings, device, outputs, pass_s), convert_s)
