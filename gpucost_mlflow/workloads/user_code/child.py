"""The user's own inference code (`workload: python:PATH_OR_MODULE`), run by the harness as a built-in workload is.

The module defines `load(settings, device) -> state`, called before the clock (its time is part of
load_s), with the pass's seed as `seed=` where it takes one (`load(settings, device, seed)`) and Python's and
numpy's generators seeded with it first, as the runner seeds torch's; and `infer(state, texts) -> list`, called
once per batch inside the clock with one output per text, in order. An output is either a dict with `label` (and
optionally a numeric `score`), judged by the protocol's classification checks, or a list of numbers, an embedding
judged as the built-in ones are. A wrong output count, an output that is neither or is not JSON, and an exception in
the user's code all fail the attempt with that reason; a campaign goes on. FLOPs are counted only when the module
declares `flops(batch_token_counts)`; otherwise they stay empty with the reason UNKNOWN_FLOPS.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import math
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy

from gpucost_mlflow.core.errors import one_line
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.names import MFU_PADDED, MFU_USEFUL, TOKENS_REAL, USEFUL_FLOP_PER_S
from gpucost_mlflow.execution.batching import batches, each_batch

UNKNOWN_FLOPS = "FLOPs unknown for user code"


class OutputError(Exception):
    """What the user's infer returned breaks the contract: the count, the type of an output, or JSON."""


@dataclass
class UserOutputs:
    """The user's outputs with their ids, in processing order; what kind they are; the batches behind them."""

    ids: list[str] = field(default_factory=list)
    outputs: list = field(default_factory=list)
    kind: str = ""  # labels | embeddings ("" before the first output)
    texts: list[str] = field(default_factory=list)  # every text of the pass, for token counts after the clock
    lengths: list[int] | None = None  # token counts, when the batching order needed them inside the clock
    plan: list[list[int]] = field(default_factory=list)  # the batches that completed

    def batch_lengths(self, tokenizer, settings: Settings) -> list[list[int]]:
        """Harness token counts per completed batch (counted now when the batching order did not need them)."""
        lengths = self.lengths if self.lengths is not None else token_counts(tokenizer, self.texts, settings)
        return [[lengths[i] for i in batch] for batch in self.plan]


def token_counts(tokenizer, texts: list[str], settings: Settings) -> list[int]:
    """Tokens per text with the harness tokenizer, special tokens included, truncated at the variant's max_length."""
    encoded = tokenizer(texts, truncation=True, max_length=settings.max_length, return_attention_mask=False,
                        return_token_type_ids=False)["input_ids"]
    return [len(seq) for seq in encoded]


def import_user_module(code: str):
    """The user's module: a .py file by its absolute path (its folder goes on sys.path), or an importable name."""
    path = Path(code)
    if path.suffix != ".py" or not path.is_absolute():
        return importlib.import_module(code)
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def load(spec, device) -> Work:
    """Seed Python's and numpy's generators with the pass's seed, import the user's module and call its
    load(settings, device), with the seed where it takes one; the harness tokenizer only where it is needed. Its
    process runs under the variant's sdpa_backend (execution/attention.py)."""
    from gpucost_mlflow.execution import attention, models  # deferred: imports torch

    random.seed(spec.seed)  # as the runner seeds torch's (protocol seeds: a stochastic workload repeats at each)
    numpy.random.seed(spec.seed)
    module = import_user_module(spec.workload.code)
    for name in ("load", "infer"):
        if not callable(getattr(module, name, None)):
            raise OutputError(f"user code {spec.workload.code} has no callable {name}()")
    settings = spec.settings
    counting = callable(getattr(module, "flops", None))
    tokenizer = (models.load_tokenizer(Path(spec.model_path)) if counting or settings.length_grouping == "sorted"
                 else None)
    state = module.load({**settings.record(), "model_path": spec.model_path}, str(device),
                        **seed_argument(module.load, spec.seed))
    return attention.observed(Work(tokenizer, state, partial(process, infer=module.infer),
                                   partial(utilisation, module, tokenizer, settings, device), export,
                                   empty=UserOutputs), settings, device)


def seed_argument(function: Callable, seed: int) -> dict:
    """{'seed': seed} where the user's function takes a `seed` parameter (or any keyword), else nothing: the seed
    reaches code that asks for it, and a two-argument load(settings, device) is called as before."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return {}
    takes = any((p.name == "seed" and p.kind is not p.POSITIONAL_ONLY) or p.kind is p.VAR_KEYWORD for p in parameters)
    return {"seed": seed} if takes else {}


def process(ids, texts, tokenizer, state, settings, device, on_batch: Callable[[int, int], None] | None = None, *,
            infer: Callable) -> UserOutputs:
    """Batch the texts in the harness's order and call infer once per batch; every batch's outputs are checked.

    On an exception it raises PassFailure carrying the outputs of the finished batches."""
    grouping = settings.length_grouping
    lengths = token_counts(tokenizer, texts, settings) if grouping == "sorted" else None
    plan = batches(lengths if lengths is not None else [0] * len(texts), settings.batch_size, grouping)
    done = UserOutputs(texts=texts, lengths=lengths)

    def step(batch: list[int]) -> None:
        result = infer(state, [texts[i] for i in batch])
        done.kind = _checked(result, len(batch), len(done.plan) + 1, done.kind)
        done.outputs.extend(result)
        done.ids.extend(ids[i] for i in batch)
        done.plan.append(batch)

    return each_batch(plan, on_batch, step, lambda failed: done)


def _checked(result, expected: int, number: int, kind: str) -> str:
    """The kind of a batch's outputs (labels or embeddings), or OutputError saying what is wrong with them."""
    if not isinstance(result, (list, tuple)):
        raise OutputError(f"infer returned a {type(result).__name__} for batch {number}, not a list of outputs")
    if len(result) != expected:
        raise OutputError(f"infer returned {len(result)} output(s) for {expected} text(s) (batch {number})")
    width = None
    for position, output in enumerate(result, start=1):
        where = f"output {position} of batch {number}"
        if isinstance(output, dict):
            found = "labels"
            label, score = output.get("label"), output.get("score", 0.0)
            if not isinstance(label, str) or isinstance(score, bool) or not isinstance(score, (int, float)):
                raise OutputError(f"{where}: a dict needs a text 'label' and, if given, a numeric 'score'")
            try:
                json.dumps(output, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise OutputError(f"{where} is not JSON: {one_line(exc)}") from None
        elif isinstance(output, (list, tuple)) and output:
            found = "embeddings"
            if not all(type(v) in (int, float) and math.isfinite(v) for v in output):
                raise OutputError(f"{where} is not JSON: an embedding must be a list of finite Python numbers")
            if width is not None and len(output) != width:
                raise OutputError(f"{where} has width {len(output)}, the batch's first has {width}")
            width = len(output)
        else:
            raise OutputError(f"{where} is a {type(output).__name__}: expected a dict with 'label' or a list of "
                              "numbers")
        if kind and found != kind:
            raise OutputError(f"{where} is {found}, earlier outputs were {kind}: one kind per pass")
        kind = found
    return kind


def utilisation(module, tokenizer, settings: Settings, device, outputs: UserOutputs, pass_s: float | None) -> dict:
    """The pass's FLOPs from the module's own flops(batch_token_counts), or empty with the reason."""
    from dataclasses import asdict

    from gpucost_mlflow.execution import peak  # deferred: imports torch

    keys = (USEFUL_FLOP_PER_S, MFU_USEFUL, MFU_PADDED)
    if pass_s is None:
        return {"missing_measurements": {key: "pass did not complete" for key in keys[1:]}}
    if not callable(getattr(module, "flops", None)):
        return {"missing_measurements": {key: UNKNOWN_FLOPS + " (the module declares no flops())" for key in keys}}
    counts = outputs.batch_lengths(tokenizer, settings)
    try:
        total = module.flops(counts)
    except Exception as exc:  # noqa: BLE001 - the user's count failing leaves the FLOPs empty, with why
        return {"missing_measurements": {key: f"{UNKNOWN_FLOPS}: flops() raised {type(exc).__name__}: {exc}"[:300]
                                         for key in keys}}
    if isinstance(total, bool) or not isinstance(total, (int, float)) or not math.isfinite(total) or total < 0:
        return {"missing_measurements": {key: f"{UNKNOWN_FLOPS}: flops() returned {total!r}, not a FLOP count"[:300]
                                         for key in keys}}
    metrics = {"flops_useful": float(total), TOKENS_REAL: float(sum(map(sum, counts)))}
    missing = {MFU_PADDED: "padding FLOPs unknown for user code (flops() counts the work it declares)"}
    found, why = peak.lookup(device, peak.precision_of(settings))
    if pass_s > 0:
        metrics[USEFUL_FLOP_PER_S] = total / pass_s
        if found:
            metrics.update(peak_flop_per_s=float(found.flop_per_s), mfu_useful=total / pass_s / found.flop_per_s)
    if found is None:
        missing[MFU_USEFUL] = why
    return {"metrics": metrics, "peak": asdict(found) if found else {}, "missing_measurements": missing}


def export(folder: Path, outputs, duplicate_at: int = 0) -> None:
    """Labels as predictions.jsonl.gz (id, label, score when given); embeddings as the float16 .npy files."""
    ids, values = list(outputs.ids), list(getattr(outputs, "outputs", []))
    if 0 < duplicate_at <= len(ids):
        ids.insert(duplicate_at, ids[duplicate_at - 1])
        values.insert(duplicate_at, values[duplicate_at - 1])
    if getattr(outputs, "kind", "") == "embeddings":
        registry.output("embeddings").write_embeddings(folder, ids, values)  # its rules' writer (numpy), found by name
        return
    registry.output("labels").write_labels(folder / verdicts.PREDICTIONS, (
        {"id": ident, "label": output["label"], **({"score": output["score"]} if "score" in output else {})}
        for ident, output in zip(ids, values)))
