"""Harness overhead: the pass's measured clock against a bare loop doing the same work.

Same model, corpus, batches (corpus order), padding (longest in batch) and max length. The bare
loop is what a user would write: read the file, then per batch tokenize, forward, argmax, to host.
Five paired repetitions, the order inside each pair alternating. Prints pass_s / bare_s; target <= 1.03.

    .venv/bin/python benchmarks/harness_overhead.py [--variant batch8] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.execution import measured, models, runner
from gpucost_mlflow.execution.timing import no_sync
from gpucost_mlflow.workloads.classification import batches
from gpucost_mlflow.workloads.classification import model as classifier_model

ROOT = Path(__file__).resolve().parents[1]


def bare_loop(corpus: Path, tokenizer, model, batch_size: int, max_length: int) -> tuple[list[str], list[int], float]:
    """The loop a user would write, timed with the same host clock."""
    started = time.perf_counter_ns()
    with open(corpus, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    labels: list[int] = []
    with torch.inference_mode():
        for start in range(0, len(records), batch_size):
            batch = [r["text"] for r in records[start : start + batch_size]]
            encoded = tokenizer(batch, padding="longest", truncation=True, max_length=max_length, return_tensors="pt")
            labels.extend(model(**encoded).logits.argmax(dim=-1).tolist())
    return [r["id"] for r in records], labels, (time.perf_counter_ns() - started) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="batch8")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus/comparison.jsonl")
    parser.add_argument("--model", type=Path, default=ROOT / "data/model")
    args = parser.parse_args()

    settings = get_variant(ROOT / "projects/variants.yaml", args.variant).settings
    runner.tokenizer_parallelism(settings)  # as the pass's child sets it
    device = torch.device("cpu")
    tokenizer = models.load_tokenizer(args.model)
    model = classifier_model.load_classifier(args.model, device, "fp32", "none", settings.attention, False)
    ids, texts = measured.read_texts(str(args.corpus))
    n = runner.WARMUP_RULE["inputs"]
    batches.process(ids[:n], texts[:n], tokenizer, model, settings, device)
    bare_loop(args.corpus, tokenizer, model, settings.batch_size, settings.max_length)

    processing = measured.Processing(batches.process, tokenizer, model, settings, device)
    pass_times, bare_times = [], []
    for repeat in range(args.repeats):
        for which in (("pass", "bare") if repeat % 2 == 0 else ("bare", "pass")):
            if which == "pass":
                predictions, seconds = measured.measure(str(args.corpus), processing, no_sync)
                pass_times.append(seconds)
            else:
                bare_ids, bare_labels, seconds = bare_loop(args.corpus, tokenizer, model, settings.batch_size, settings.max_length)
                bare_times.append(seconds)
        same = dict(zip(predictions.ids, predictions.labels)) == dict(zip(bare_ids, bare_labels))
        print(f"repeat {repeat + 1}: pass_s {pass_times[-1]:.3f}  bare_s {bare_times[-1]:.3f}  "
              f"ratio {pass_times[-1] / bare_times[-1]:.3f}  identical predictions: {same}")
    ratio = statistics.median(pass_times) / statistics.median(bare_times)
    print(f"variant {args.variant}, {len(ids)} inputs, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"median pass_s {statistics.median(pass_times):.3f} (min {min(pass_times):.3f}, max {max(pass_times):.3f})")
    print(f"median bare_s {statistics.median(bare_times):.3f} (min {min(bare_times):.3f}, max {max(bare_times):.3f})")
    print(f"pass_s / bare_s = {ratio:.3f} (target <= 1.03)")


if __name__ == "__main__":
    main()
