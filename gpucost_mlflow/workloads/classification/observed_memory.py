"""The classifier's memory observed on this device (`gpucost memory measure`): one batch of batch x max_length
tokens, sampled after each module, against the estimate (docs/memory.md)."""

from __future__ import annotations

import time

import torch

from gpucost_mlflow.execution import memory, models
from gpucost_mlflow.workloads.classification.model import load_classifier


def measure(model_dir, precision: str, batch: int, max_length: int, device_choice: str = "auto") -> dict:
    """Load the classifier on the local device, run one batch of batch x max_length tokens, and return
    the observed peaks with the module after which each was reached (allocated and reserved apart)."""


    from transformers import AutoModelForSequenceClassification  # noqa: F401 - imported before the baseline is read

    device = models.resolve_device(device_choice)
    before_load = torch.cuda.memory_allocated(device) if device.type == "cuda" else memory.rss_bytes()
    quantization = "dynamic-int8" if precision == "int8" else "none"
    model = load_classifier(model_dir, device, "fp32" if precision == "int8" else precision, quantization, "sdpa",
                            False)
    started = time.perf_counter()
    samples: list[tuple[str, float, dict]] = []

    def sample(label: str) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            values = {"allocated": torch.cuda.memory_allocated(device), "reserved": torch.cuda.memory_reserved(device)}
        else:
            values = {"rss": memory.rss_bytes()}
        samples.append((label, time.perf_counter() - started, values))

    hooks = [module.register_forward_hook(lambda m, i, o, name=name: sample(name))
             for name, module in model.named_modules() if name.count(".") <= 3 and name]
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    input_ids = torch.randint(1000, vocab, (batch, max_length), generator=generator).to(device)
    mask = torch.ones_like(input_ids)
    memory.reset_peaks(device)
    sample("before forward")
    with torch.inference_mode():
        model(input_ids=input_ids, attention_mask=mask)
    sample("after forward")
    for hook in hooks:
        hook.remove()
    observed = {}
    for counter in samples[0][2]:
        label, at, values = max(samples, key=lambda s: s[2][counter])
        observed[counter] = {"peak_bytes": values[counter], "after": label, "at_s": at}
    if device.type == "cuda":
        observed["allocated"]["max_memory_allocated"] = torch.cuda.max_memory_allocated(device)
        observed["reserved"]["max_memory_reserved"] = torch.cuda.max_memory_reserved(device)
        counter_name = ("torch.cuda.memory_allocated / memory_reserved sampled after each module; max_memory_* as the "
                        "true peaks")
    else:
        observed["rss"]["ru_maxrss"] = memory.peaks(device)["metrics"]["mem_peak_rss_bytes"]
        counter_name = ("process RSS (/proc/self/statm) sampled after each module; ru_maxrss = whole-process peak, "
                        "load included")
    key = "allocated" if device.type == "cuda" else "rss"
    observed["model_and_activations_bytes"] = observed[key]["peak_bytes"] - before_load
    return {"device": str(device), "counter": counter_name, "observed": observed,
            "before_load": before_load, "after_load": samples[0][2]}
