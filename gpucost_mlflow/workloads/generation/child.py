"""The built-in generation workload: greedy batch generation with a causal LM, KV cache on, left padding.

The model is a transformers directory or a GGUF file (`AutoModelForCausalLM.from_pretrained(folder,
gguf_file=...)` dequantises it to fp32). A GGUF file is dequantised once per file and transformers version
into a local cache folder (safetensors and tokenizer, keyed by the file's sha256, recorded in the
manifest); later passes load that folder. The pass that writes the cache has the dequantisation and the
writing in its `load_s`, a pass that reads it only the reading: what a rented machine would do too.

Inside the measured clock each batch is timed in two parts: from its start (padding, transfer) to its
first new token (prefill: one sync when the first token is chosen, through a stopping criterion that
otherwise only returns "go on"), then to its new tokens on the host (decode). Nothing else is added.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import sources
from gpucost_mlflow.core.inputs.fingerprints import sha256_file
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.measurement import flops
from gpucost_mlflow.core.names import (
    DECODE_S,
    MFU_PADDED,
    MFU_USEFUL,
    OUTPUT_TOKENS_PER_S,
    PREFILL_S,
    TOKENS_GENERATED,
    TOKENS_PROMPT,
    USEFUL_FLOP_PER_S,
)
from gpucost_mlflow.execution.batching import batches, each_batch, shapes
from gpucost_mlflow.execution.batching import width as padded_width
from gpucost_mlflow.workloads.generation import decoder_flops
from gpucost_mlflow.workloads.generation.output import GENERATIONS, write_generations
from gpucost_mlflow.workloads.generation.task import GenerationSettings, render

CACHE_ENV = "GPUCOST_MODEL_CACHE"
CACHE_MARKER = "gpucost_gguf.json"
TIMED = (TOKENS_PROMPT, TOKENS_GENERATED, OUTPUT_TOKENS_PER_S, PREFILL_S, DECODE_S)
FLOP_KEYS = (USEFUL_FLOP_PER_S, MFU_USEFUL, MFU_PADDED)


@dataclass
class Generated:
    """The outputs of the completed batches in processing order, with what their FLOPs and timings need."""

    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    tokens: list[list[int]] = field(default_factory=list)  # new tokens per output, end-of-sequence included
    shapes: list[tuple[list[int], list[int]]] = field(default_factory=list)  # per batch: prompt lengths, new counts
    prefill_s: list[float] = field(default_factory=list)  # per batch: start to first new token
    decode_s: list[float] = field(default_factory=list)  # per batch: first new token to the new tokens on the host

    def add(self, tokenizer, ids: list[str], prompt_lengths: list[int], new: list[list[int]], prefill_s: float,
            decode_s: float) -> None:
        """One finished batch: its new tokens decoded (after the batch's clock reads), its shapes and timings."""
        self.texts.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
        self.tokens.extend(new)
        self.ids.extend(ids)
        self.shapes.append((prompt_lengths, [len(row) for row in new]))
        self.prefill_s.append(prefill_s)
        self.decode_s.append(decode_s)


def cache_root() -> Path:
    """Where dequantised GGUF models are kept: $GPUCOST_MODEL_CACHE, else ~/.cache/gpucost/models."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "gpucost" / "models")


def cache_folder(sha256: str) -> Path:
    """The cache folder of one GGUF file (by its sha256) under the installed transformers version."""
    import transformers

    return cache_root() / f"gguf-{sha256[:16]}-transformers-{transformers.__version__}"


def cached(folder: Path, sha256: str) -> bool:
    """Whether the folder holds a complete dequantised copy of the GGUF file with this sha256."""
    try:
        return json.loads((folder / CACHE_MARKER).read_text(encoding="utf-8")).get("gguf_sha256") == sha256
    except (OSError, ValueError):
        return False


def dequantised(gguf: Path, sha256: str, folder: Path) -> Path:
    """The cache folder for the GGUF file, written first when absent (dequantised to fp32, saved as safetensors
    with its tokenizer); written whole into a temporary folder and renamed, so a reader never sees half of it."""
    if cached(folder, sha256):
        return folder
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The weights are plain fp32 tensors now; only the config still says GGUF, which save_pretrained refuses.
    model.hf_quantizer, model.is_quantized = None, False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    folder.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        model.save_pretrained(temp)
        tokenizer.save_pretrained(temp)
        (temp / CACHE_MARKER).write_text(json.dumps({"gguf_sha256": sha256, "gguf_file": str(gguf)}), encoding="utf-8")
        try:
            os.rename(temp, folder)
        except OSError:  # another pass wrote it meanwhile: keep theirs
            if not cached(folder, sha256):
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return folder


def load(spec, device) -> Work:
    """The causal LM and its tokenizer with the variant's precision, attention and compile, its process under the
    variant's sdpa_backend (execution/attention.py); a GGUF file through its dequantised cache."""
    from gpucost_mlflow.execution import attention, models  # deferred: imports torch

    settings, workload = spec.settings, spec.workload
    generation, folder = workload.generation, model_folder(workload, spec.model_path)
    tokenizer = models.load_tokenizer(folder)
    if generation.chat_template and not getattr(tokenizer, "chat_template", None):
        raise GpucostError(f"{folder}: the tokenizer has no chat template, and generation.chat_template is true")
    model = models.load_causal_lm(folder, device, settings.precision, settings.quantization,
                                  settings.attention, settings.compile)
    return attention.observed(Work(tokenizer, model, partial(process, prompting=Prompting(generation, workload.labels)),
                                   partial(utilisation, model.config.to_dict(), settings, device), export,
                                   empty=Generated), settings, device)


def model_folder(workload, model_path: str | Path) -> Path:
    """The transformers folder a pass loads: the model path given, or a GGUF file's dequantised cache (workload:
    generation's `Workload` record)."""
    gguf = workload.gguf
    return dequantised(Path(gguf["path"]), gguf["sha256"], Path(workload.cache)) if gguf else Path(model_path)


def prompts_of(texts: list[str], tokenizer, max_length: int, generation: GenerationSettings,
               labels: list[str]) -> list[str]:
    """Each input's prompt: its text cut at max_length tokens (the template is not cut), put in the template, and
    wrapped as a user message by the chat template when the protocol says so."""
    counted = tokenizer(texts, add_special_tokens=False, return_attention_mask=False)["input_ids"]
    cut = [tokenizer.decode(ids[:max_length]) if len(ids) > max_length else text for text, ids in zip(texts, counted)]
    prompts = [render(generation.prompt, text, labels) for text in cut]
    if generation.chat_template:
        prompts = [tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                 add_generation_prompt=True) for prompt in prompts]
    return prompts


def end_tokens(model, tokenizer) -> set[int]:
    """The token ids that end an answer: the model's generation config's, else the tokenizer's."""
    declared = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if declared is None:
        declared = tokenizer.eos_token_id
    return set(declared if isinstance(declared, list) else [declared] if declared is not None else [])


def trimmed(new: list[int], ends: set[int]) -> list[int]:
    """New tokens up to and including the first end-of-sequence token (what follows it is padding)."""
    for position, token in enumerate(new):
        if token in ends:
            return new[: position + 1]
    return new


def first_token_clock(sync: Callable[[], None]):
    """A stopping criterion that never stops: at its first call (the first new token is chosen) it syncs the device
    and reads the clock."""
    import torch
    from transformers import StoppingCriteria

    class FirstToken(StoppingCriteria):
        at: float | None = None

        def __call__(self, input_ids, scores, **kwargs):
            if self.at is None:
                sync()
                self.at = time.perf_counter()
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    return FirstToken()


@dataclass(frozen=True)
class Prompting:
    """What a generation pass asks of every input beyond the harness's settings: the protocol's task, the labels its
    prompt may offer, and the end tokens an engine stops at (torch reads them off its model)."""

    generation: GenerationSettings
    labels: list[str]
    ends: list[int] = field(default_factory=list)


def encoded_prompts(texts: list[str], tokenizer, settings: Settings, prompting: Prompting
                    ) -> tuple[list[list[int]], list[int], list[list[int]]]:
    """Every input's prompt as token ids (the chat template's own special tokens, or the tokenizer's), their lengths
    and the harness's batch plan over them: the same for every engine."""
    generation = prompting.generation
    prompts = prompts_of(texts, tokenizer, settings.max_length, generation, prompting.labels)
    encoded = tokenizer(prompts, add_special_tokens=not generation.chat_template, return_attention_mask=False,
                        return_token_type_ids=False)["input_ids"]
    lengths = [len(seq) for seq in encoded]
    return encoded, lengths, batches(lengths, settings.batch_size, settings.length_grouping)


def process(ids, texts, tokenizer, model, settings, device, on_batch: Callable[..., None] | None = None, *,
            prompting: Prompting) -> Generated:
    """Prompts, batches in the harness's order, each left-padded to its longest prompt (or up to pad_to_multiple_of),
    transferred, generated greedily with the KV cache, brought to the host and decoded. On an exception it raises
    PassFailure carrying the outputs of the batches finished before."""
    import numpy as np
    import torch
    from transformers import GenerationConfig, StoppingCriteriaList

    generation = prompting.generation
    encoded, lengths, plan = encoded_prompts(texts, tokenizer, settings, prompting)
    ends = end_tokens(model, tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(ends, default=0)
    config = GenerationConfig(max_new_tokens=generation.max_new_tokens, do_sample=False, num_beams=1, use_cache=True,
                              pad_token_id=pad_id, eos_token_id=sorted(ends) or None)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    done = Generated()

    def step(batch: list[int]) -> None:
        started = time.perf_counter()
        width = padded_width([lengths[i] for i in batch], settings)
        input_ids = np.full((len(batch), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, index in enumerate(batch):
            input_ids[row, width - lengths[index]:] = encoded[index]
            mask[row, width - lengths[index]:] = 1
        clock = first_token_clock(sync)
        out = model.generate(input_ids=torch.from_numpy(input_ids).to(device, non_blocking=True),
                             attention_mask=torch.from_numpy(mask).to(device, non_blocking=True),
                             generation_config=config, stopping_criteria=StoppingCriteriaList([clock]))
        new = [trimmed(row, ends) for row in out[:, width:].cpu().tolist()]
        ended = time.perf_counter()
        first = clock.at if clock.at is not None else ended
        done.add(tokenizer, [ids[i] for i in batch], [lengths[i] for i in batch], new, first - started, ended - first)

    with torch.inference_mode():
        return each_batch(plan, on_batch, step, lambda failed: done, shapes(lengths, settings))


def utilisation(config: dict, settings: Settings, device, outputs, pass_s: float | None) -> dict:
    """Token counts, output tokens per second, the prefill / decode split, and FLOPs with the KV cache (prefill and
    decode, useful and padded) and MFU against the cached peak (decoder_flops.py)."""
    from dataclasses import asdict

    from gpucost_mlflow.execution import peak  # deferred: imports torch

    if pass_s is None:
        return {"missing_measurements": {key: "pass did not complete" for key in (*TIMED, *FLOP_KEYS)}}
    shapes = list(getattr(outputs, "shapes", []))
    generated = sum(sum(answers) for _, answers in shapes)
    metrics = {TOKENS_PROMPT: float(sum(sum(prompts) for prompts, _ in shapes)), TOKENS_GENERATED: float(generated),
               OUTPUT_TOKENS_PER_S: generated / pass_s if pass_s > 0 else None,
               PREFILL_S: float(sum(outputs.prefill_s)), DECODE_S: float(sum(outputs.decode_s))}
    metrics = {key: value for key, value in metrics.items() if value is not None}
    try:
        shape = decoder_flops.decoder_shape(config)
    except GpucostError as exc:
        return {"metrics": metrics, "missing_measurements": {key: str(exc) for key in FLOP_KEYS}}
    counted = decoder_flops.count(shape, shapes)
    found, why = peak.lookup(device, peak.precision_of(settings))
    result = {"metrics": {**metrics, **flops.rates(counted.total(), pass_s, found.flop_per_s if found else None),
                          **counted.metrics()},
              "peak": asdict(found) if found else {}}
    if found is None:
        result["missing_measurements"] = {key: why for key in FLOP_KEYS[1:]}
    return result


def export(folder: Path, outputs, duplicate_at: int = 0) -> None:
    """generations.jsonl.gz: id, text and new tokens per input; a failed pass exports what it finished."""

    write_generations(folder / GENERATIONS, list(outputs.ids), list(getattr(outputs, "texts", [])),
                      list(getattr(outputs, "tokens", [])), duplicate_at)


def describe(model_path: Path, task: GenerationSettings | None, labels: list[str]) -> tuple[dict, dict]:
    """What the manifest records (checked before any run): the model section, and the workload section's generation
    task, model file and cache, which the child is given as they are. A GGUF file is hashed here, once per pass."""
    from gpucost_mlflow.execution import models  # deferred: imports torch

    if task is None:
        raise GpucostError("workload generation needs a protocol with a generation section "
                           "(acceptance.output: generations, e.g. projects/protocol-generation.yaml)")
    run = {"generation": task, "labels": list(labels), "gguf": {}, "cache": ""}
    if model_path.suffix == ".gguf" or model_path.is_file():
        if not model_path.is_file():
            raise GpucostError(f"{model_path}: GGUF file not found (--model takes a transformers folder or a .gguf "
                               "file)")
        digest = sha256_file(model_path)
        folder = cache_folder(digest)
        packaged = _packaged(model_path, digest, sources)
        run.update(gguf={"path": str(model_path.resolve()), "file": model_path.name, "sha256": digest},
                   cache=str(folder), cache_present_at_start=cached(folder, digest))
        return {"path": str(model_path.resolve()), "revision": digest, "tokenizer_revision": digest, "labels": labels,
                "architecture": "AutoModelForCausalLM from GGUF (dequantised to fp32)",
                "sources": [packaged] if packaged else [], "trained_on": {}}, run
    _, described = models.read_folder(model_path,
                                      "model not found (--model takes a transformers folder or a .gguf file)")
    return {"path": str(model_path.resolve()), **described, "labels": labels, "sources": [], "trained_on": {}}, run


def _packaged(path: Path, digest: str, sources) -> dict:
    """The package record of the GGUF file when it is the packaged SmolLM2 file (found, never imported)."""
    try:
        shipped = sources.package_path(*sources.DEFAULT_GENERATION_PACKAGE)
    except GpucostError:
        return {}
    if shipped.resolve() != path.resolve():
        return {}
    return sources.packaged(*sources.DEFAULT_GENERATION_PACKAGE, digest=digest).record()


def preload() -> None:
    """What the fork server imports once for this kind (execution/forkserver.py): the generation demo's architecture."""
    from transformers import AutoModelForCausalLM  # noqa: F401 - a lazy module of transformers
    from transformers.models.llama import modeling_llama  # noqa: F401 - loaded lazily by from_pretrained
