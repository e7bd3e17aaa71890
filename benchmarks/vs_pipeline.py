"""Against what users would pick instead: the pass's measured clock vs transformers.pipeline("text-classification").

Same model object, corpus, batch size (8) and max length (256); padding to the longest input of each
batch in both. The pipeline side is timed with the same host clock and the same boundaries as the
pass: read the corpus file, classify every text, hold the labels on the host.

(a) identical settings: pipeline_s / pass_s for the fp32 reference (batch8, corpus order), with the
    predictions compared id by id; target >= 1.0 with identical predictions.
(b) the fastest variant of the demo's second and third series that the pre-registered protocol accepts (the
    launcher's own checks: quality bars, and agreement / metric difference against the fp32
    reference for a numerics change) against the same pipeline runs; target >= 4.0, with its label
    agreement and macro-F1 difference beside it.

Every repetition runs the pipeline, the reference and every candidate once, in an order rotated
from one repetition to the next; ratios are of medians over the repetitions.

    .venv/bin/python benchmarks/vs_pipeline.py [--repeats 5] [--variants FILE] [--candidates a,b,c]

By default the candidates are every member of a series whose reference is --reference, read from the
demo's proposed variants file (`make demo` writes reports/gpucost-demo-variants-proposed.yaml) when it
exists, so the third series' combinations are measured too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch

from gpucost_mlflow.core.inputs.corpus import read_corpus
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import get_variant, load_series
from gpucost_mlflow.core.judging import judge, like_for_like, verdicts
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement import flops
from gpucost_mlflow.execution import models, peak, runner
from gpucost_mlflow.execution.timing import Stopwatch, no_sync
from gpucost_mlflow.workloads import encoder_flops
from gpucost_mlflow.workloads.classification import batches
from gpucost_mlflow.workloads.classification import model as classifier_model

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = "pipeline"


def pipeline_pass(pipe, corpus: Path, batch_size: int, max_length: int, sync) -> tuple[dict[str, str], float]:
    """What a user would write: read the file, run the pipeline over every text, keep the labels."""
    clock = Stopwatch(sync)
    clock.start()
    ids, texts = runner.read_texts(str(corpus))
    outputs = pipe(texts, batch_size=batch_size, truncation=True, max_length=max_length)
    labels = [output["label"] for output in outputs]
    seconds = clock.stop()
    return dict(zip(ids, labels)), seconds


def judged(rows: list[dict], labels: list[str], protocol, predicted: dict[str, str],
           reference: judge.Reference | None = None, unlike: verdicts.Check | None = None) -> judge.Judgement:
    """The launcher's verdict on a pass (flow/judging.py): its output's rules on its labels by id, against `reference`
    when given, `unlike` the failed check of a variant asking other work than the reference's. The product's own judge,
    so a change of its checks changes this verdict too, never breaks it."""
    back = verdicts.ReadBack(ids=list(predicted), labels=dict(predicted))
    return registry.output(protocol.acceptance.output).judge_pass(judge.Judging(
        completed=True, failure_reason="", rows=rows, back=back, protocol=protocol, labels=labels,
        needs_reference=reference is not None, reference=reference,
        reference_name=reference.run_id if reference else "", unlike=unlike))


def judged_against(rows: list[dict], labels: list[str], protocol, predicted: dict[str, str], settings,
                   reference_settings, reference: judge.Reference) -> judge.Judgement:
    """A variant judged as a campaign judges it: against the reference when its output's rules say its settings
    differ in what matters (numerics, work), on the bars alone otherwise."""
    rules = registry.output(protocol.acceptance.output)
    if not rules.needs_reference(settings, reference_settings):
        return judged(rows, labels, protocol, predicted)
    unlike = like_for_like.check(settings, reference_settings, reference.run_id, getattr(rules, "LIKE_FOR_LIKE", ()),
                                 protocol.acceptance.changes_work)
    return judged(rows, labels, protocol, predicted, reference, unlike)


def failures(judgement: judge.Judgement) -> str:
    """The failed (or not shown) checks of a verdict, each with its reason."""
    return "; ".join(f"{c.name}: {c.reason}" for c in judgement.checks if not c.passed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reference", default="batch8")
    parser.add_argument("--candidates", default="",
                        help="Comma-separated variants (default: every member of a series with a reference in --variants)")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus/comparison.jsonl")
    parser.add_argument("--model", type=Path, default=ROOT / "data/model")
    parser.add_argument("--protocol", type=Path, default=ROOT / "projects/protocol.yaml")
    proposed = ROOT / "reports/gpucost-demo-variants-proposed.yaml"
    parser.add_argument("--variants", type=Path, default=proposed if proposed.exists() else ROOT / "projects/variants.yaml",
                        help="Default: the demo's proposed third series when `make demo` wrote it, else projects/variants.yaml")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args()

    from transformers import pipeline
    from transformers.utils import logging as hf_logging

    protocol = load_protocol(args.protocol)
    info = models.describe_model(args.model)
    rows = read_corpus(args.corpus, labels=info.labels).rows
    candidates = [n for n in args.candidates.split(",") if n] or [
        member for series in load_series(args.variants).values() if series.reference == args.reference
        for member in series.members]
    names = [args.reference] + candidates
    settings = {name: get_variant(args.variants, name).settings for name in names}
    chosen = models.resolve_device(args.device)
    for name in names:
        settings[name] = settings[name].changed(device="cpu" if settings[name].quantization == "dynamic-int8"
                                                else str(chosen))
    sync = torch.cuda.synchronize if chosen.type == "cuda" else no_sync
    tokenizer = models.load_tokenizer(args.model)
    loaded: dict[tuple, object] = {}

    def model_for(name: str):
        s = settings[name]
        key = (s.device, s.precision, s.quantization, s.attention, s.compile)
        if key not in loaded:
            loaded[key] = classifier_model.load_classifier(args.model, torch.device(s.device), s.precision, s.quantization,
                                                 s.attention, s.compile)
        return loaded[key]

    reference = settings[args.reference]
    runner.tokenizer_parallelism(reference)  # as in the pass's child; also the tokenizers default a user gets
    hf_logging.set_verbosity_error()
    pipe = pipeline("text-classification", model=model_for(args.reference), tokenizer=tokenizer, device=chosen)
    ids, texts = runner.read_texts(str(args.corpus))
    warm = protocol.warmup["inputs"]
    pipe(texts[:warm], batch_size=reference.batch_size, truncation=True, max_length=reference.max_length)
    for name in names:
        batches.process(ids[:warm], texts[:warm], tokenizer, model_for(name), settings[name], torch.device(settings[name].device))

    times: dict[str, list[float]] = {name: [] for name in [PIPELINE] + names}
    predicted: dict[str, dict[str, str]] = {}
    shapes: dict[str, list[list[int]]] = {}
    identical = []
    order = [PIPELINE] + names
    for repeat in range(args.repeats):
        turn = order[repeat % len(order):] + order[: repeat % len(order)]
        for name in turn:
            if name == PIPELINE:
                labels, seconds = pipeline_pass(pipe, args.corpus, reference.batch_size, reference.max_length, sync)
            else:
                device = torch.device(settings[name].device)
                run_sync = torch.cuda.synchronize if device.type == "cuda" else no_sync
                result, seconds = runner.measure(str(args.corpus), runner.Processing(
                    batches.process, tokenizer, model_for(name), settings[name], device), run_sync)
                labels = {i: info.labels[k] for i, k in zip(result.ids, result.labels)}
                shapes[name] = result.batch_lengths()
            times[name].append(seconds)
            predicted.setdefault(name, labels)
            if name in (PIPELINE, args.reference) and labels != predicted[name]:
                print(f"warning: {name} predictions changed between repetitions")
        identical.append(predicted[PIPELINE] == predicted[args.reference])
        print(f"repeat {repeat + 1} ({' -> '.join(turn)}): "
              + "  ".join(f"{name} {times[name][-1]:.3f}" for name in order))

    median = {name: statistics.median(values) for name, values in times.items()}
    shape = encoder_flops.encoder_shape(model_for(args.reference).config.to_dict())
    print(f"\n{len(ids)} inputs, {args.repeats} repetitions, device {chosen}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, transformers {__import__('transformers').__version__}")
    print(f"{'configuration':24} {'median s':>9} {'min':>8} {'max':>8} {'pipeline/x':>10} {'useful GFLOP/s':>15} "
          f"{'padded GFLOP/s':>15} {'MFU useful':>10} {'MFU padded':>10}")
    for name in order:
        count = encoder_flops.count(shape, shapes[name]) if name in shapes else None
        found = peak.lookup(torch.device(settings[name].device), peak.precision_of(settings[name]))[0] if count else None
        rate = flops.rates(count, median[name], found.flop_per_s if found else None) if count else {}
        cells = [f"{rate[k] / 1e9:15.1f}" if k in rate else f"{'':>15}" for k in ("useful_flop_per_s", "padded_flop_per_s")]
        cells += [f"{rate[k]:10.3f}" if k in rate else f"{'':>10}" for k in ("mfu_useful", "mfu_padded")]
        print(f"{name:24} {median[name]:9.3f} {min(times[name]):8.3f} {max(times[name]):8.3f} "
              f"{median[PIPELINE] / median[name]:10.3f} {' '.join(cells)}")

    ref_judged = judged(rows, info.labels, protocol, predicted[args.reference])
    ref_quality = ref_judged.quality
    against = judge.Reference(args.reference, dict(ref_quality), predicted[args.reference])
    print(f"\n(a) identical settings ({args.reference}: batch {reference.batch_size}, {reference.precision}, "
          f"corpus order, max length {reference.max_length}):")
    print(f"    pipeline_s / pass_s = {median[PIPELINE] / median[args.reference]:.3f} (target >= 1.0); "
          f"identical predictions in every repetition: {all(identical)} "
          f"(label agreement {100 * verdicts.agreement(predicted[args.reference], predicted[PIPELINE]):.2f} %)")

    print("\nsecond series, judged as the demo campaign judges it (protocol "
          f"{args.protocol.name}: {protocol.acceptance.main_metric} >= {protocol.acceptance.threshold}, buckets >= "
          f"{protocol.acceptance.per_bucket_threshold}; vs fp32 reference: agreement >= {protocol.acceptance.min_label_agreement}, "
          f"|difference| <= {protocol.acceptance.max_metric_difference}):")
    accepted = []
    for name in names[1:]:
        verdict = judged_against(rows, info.labels, protocol, predicted[name], settings[name], reference, against)
        ok = verdict.status == Status.ACCEPTED
        share = verdicts.agreement(predicted[name], predicted[args.reference])
        diff = verdict.quality[protocol.acceptance.main_metric] - ref_quality[protocol.acceptance.main_metric]
        print(f"    {name:24} median {median[name]:7.3f} s  agreement {100 * share:6.2f} %  macro-F1 difference "
              f"{diff:+.4f}  {'accepted' if ok else 'rejected: ' + failures(verdict)}")
        if ok:
            accepted.append((median[name], name, share, diff))
    if ref_judged.status != Status.ACCEPTED:
        print(f"    note: the reference itself fails the quality bar: {failures(ref_judged)}")
    if accepted:
        seconds, name, share, diff = min(accepted)
        print(f"\n(b) fastest accepted configuration {name} vs pipeline at batch 8 fp32 in corpus order: "
              f"pipeline_s / pass_s = {median[PIPELINE] / seconds:.3f} (target >= 4.0); "
              f"label agreement with the fp32 reference {100 * share:.2f} %, macro-F1 difference {diff:+.4f}")
    else:
        print("\n(b) no candidate accepted under the pre-registered tolerance: no ratio")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"(benchmark wall time {time.perf_counter() - started:.0f} s)")
