"""Where the measured pass's time goes: the harness's own work (read, tokenize, pad, host copy) against the model.

Times each stage of `batches.process` separately, on the same model, corpus and variant, then the
whole `runner.measure` clock. Tokenization is timed both ways the fast tokenizer can run (serial,
and on every core as the pass's child runs it). Prints the harness's share of the pass: its own
stages / (its own stages + model forward), from the same staged run; the lower the better. The
whole `runner.measure` clock is printed beside it (a separate run: machine noise shows there).

    .venv/bin/python benchmarks/pass_breakdown.py [--variants batch8,batch8-lengthgrouped] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.execution import batching, models, runner
from gpucost_mlflow.execution.timing import no_sync
from gpucost_mlflow.workloads.classification import batches
from gpucost_mlflow.workloads.classification import model as classifier_model

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ("read", "tokenize parallel", "pad + tensors", "softmax + argmax", "to host")


def tokenize_s(tokenizer, texts: list[str], max_length: int, parallel: bool) -> float:
    """Seconds to encode the corpus in one call, serial or on every core."""
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if parallel else "false"
    started = time.perf_counter()
    tokenizer(texts, truncation=True, max_length=max_length, return_attention_mask=False, return_token_type_ids=False)
    return time.perf_counter() - started


def stages(corpus: Path, tokenizer, model, settings: dict) -> dict[str, float]:
    """The stages of one pass, each timed on its own, in the runner's own order."""
    times = {}
    started = time.perf_counter()
    _, texts = runner.read_texts(str(corpus))
    times["read"] = time.perf_counter() - started
    times["tokenize serial"] = tokenize_s(tokenizer, texts, settings.max_length, False)
    times["tokenize parallel"] = tokenize_s(tokenizer, texts, settings.max_length, True)
    encoded = tokenizer(texts, truncation=True, max_length=settings.max_length, return_attention_mask=False,
                        return_token_type_ids=False)["input_ids"]
    lengths = [len(seq) for seq in encoded]
    pad = forward = post = 0.0
    labels = []
    with torch.inference_mode():
        for batch in batching.batches(lengths, settings.batch_size, settings.length_grouping):
            t0 = time.perf_counter()
            width = max(lengths[i] for i in batch)
            input_ids = np.full((len(batch), width), tokenizer.pad_token_id or 0, dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                input_ids[row, : lengths[index]] = encoded[index]
                mask[row, : lengths[index]] = 1
            inputs = torch.from_numpy(input_ids), torch.from_numpy(mask)
            t1 = time.perf_counter()
            logits = model(input_ids=inputs[0], attention_mask=inputs[1]).logits
            t2 = time.perf_counter()
            labels.append(logits.float().softmax(dim=-1).max(dim=-1)[1])
            post += time.perf_counter() - t2
            pad += t1 - t0
            forward += t2 - t1
    started = time.perf_counter()
    torch.cat(labels).tolist()
    times.update({"pad + tensors": pad, "model forward": forward, "softmax + argmax": post,
                  "to host": time.perf_counter() - started})
    runner.tokenizer_parallelism(settings)
    times["runner.measure"] = runner.measure(str(corpus), runner.Processing(batches.process, tokenizer, model, settings,
                                                                         torch.device("cpu")), no_sync)[1]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="batch8,batch8-lengthgrouped")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus/comparison.jsonl")
    parser.add_argument("--model", type=Path, default=ROOT / "data/model")
    args = parser.parse_args()
    tokenizer = models.load_tokenizer(args.model)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs; medians of {args.repeats}")
    for name in args.variants.split(","):
        settings = get_variant(ROOT / "projects/variants.yaml", name).settings
        model = classifier_model.load_classifier(args.model, torch.device("cpu"), settings.precision, settings.quantization,
                                       settings.attention, False)
        ids, texts = runner.read_texts(str(args.corpus))
        batches.process(ids[:32], texts[:32], tokenizer, model, settings, torch.device("cpu"))
        runs = [stages(args.corpus, tokenizer, model, settings) for _ in range(args.repeats)]
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(f"\n{name}:")
        for key, value in median.items():
            print(f"  {key:20} {value:8.4f} s")
        harness = sum(median[key] for key in HARNESS)
        print(f"  harness share of the pass: harness / (harness + forward) = "
              f"{harness / (harness + median['model forward']):.4f} ({harness:.3f} s); with serial tokenization "
              f"{(harness - median['tokenize parallel'] + median['tokenize serial']) / (harness + median['model forward']):.4f}; "
              f"tokenization serial / parallel = {median['tokenize serial'] / median['tokenize parallel']:.2f}")


if __name__ == "__main__":
    main()
