"""Engines against the pipeline: ONNX Runtime and CTranslate2 beside torch and transformers.pipeline, in one run.

A sibling of benchmarks/vs_pipeline.py, for the inference engines a variant may name (`engine:`,
docs/engines.md). Every configuration is loaded the way the pass's child loads it: a PassSpec whose
workload_settings are what the launcher records (the workload described by flow/workloads.describe, the
engine record of flow/workloads.engine_record: name, version, export options, cache folder), handed to
runner.load_workload, which picks `<kind>.child` for torch and `<kind>.with_<engine>` otherwise. The pass
is timed by runner.measure: the runner's Stopwatch around reading the corpus file and `work.process`,
after one warm-up on the protocol's first inputs. Export and conversion happen at load, outside the clock
(the engine cache keeps them, as for a pass).

(1) Classification, the demo classifier on the 1,000-input comparison corpus, max length 256:
    transformers.pipeline("text-classification") at batch 8 (the baseline); torch batch8 (the fp32
    reference of projects/protocol.yaml); torch fp32 batch64 length-grouped (the same batching as the ORT
    batch64 row, so the engine is the only difference); the fastest torch configurations found so far
    (bf16, length-grouped, batch 32 and 64); ONNX Runtime fp32 (ort-batch8 and batch64 length-grouped);
    ONNX Runtime int8 (ort-batch8-int8 and batch64 length-grouped). Each row: median seconds, the ratio
    pipeline_s / config_s, label agreement and macro-F1 difference against the fp32 torch reference,
    whether it passes the protocol's bars (quality bars, and the reference bars applied to every row),
    and useful MFU from the pass's own utilisation code against the cached peak of its precision.
(2) Generation, the packaged SmolLM2-135M-Instruct GGUF (dequantised cache, as the pass makes it) under
    projects/protocol-generation.yaml (chat template, 16 new tokens, greedy) on the first --gen-prompts
    inputs of the generation slice (or of the comparison corpus): transformers.pipeline("text-generation")
    at batch 8, torch gen-batch8 (the reference) and gen-batch8-lengthgrouped, CTranslate2 float32, int8
    and bfloat16 (where the installed CTranslate2 offers it), and CTranslate2 float32 with prompt-length
    grouping (CTranslate2 does not pad a batch's prompts: it runs the shortest prompt's length at once
    and feeds each longer prompt's remaining tokens one decoding step at a time, so grouping prompts of
    similar length matters more to it than to torch). Each row: output tokens per second, the ratio
    pipeline_s / config_s, exact match and token agreement with torch gen-batch8, and the protocol's bars.
(3) The fastest classification configuration that passes the bars: its useful MFU against 0.5 of the
    measured peak of its precision and, from one profiled pass (torch.profiler; ORT's own profiler on a
    twin of the pass's session), what bounds it: the median pass split into the useful FLOPs at peak rate
    (= useful MFU), the padding's FLOPs at peak rate, the time the product and attention kernels take
    beyond their FLOPs at peak rate, and the time outside them; the largest share other than the useful
    one is named. The model's product shapes are also timed alone at the pass's mean padded batch. The
    fastest passing ONNX Runtime row is analysed the same way, for the engine's kernels.

Every repetition runs every configuration of a section once, in an order rotated from one repetition to
the next; ratios are of medians. As in a campaign, where each pass runs one variant in its own child
process, each configuration's engine is loaded in a worker process of its own (the pipeline shares the
torch fp32 reference's process and model, as in vs_pipeline.py); the parent only sends "measure" and
judges what comes back. One process for every engine would not do: on a 2-core CPU, CTranslate2's
decode ran twice as slow once torch had run generation in the same process (two OpenMP runtimes), however
long the pause. A half-second pause outside the clock still precedes each timed run. MFU needs `gpucost
doctor --peak` to have cached the peaks; a row without one says so.

    .venv/bin/python benchmarks/engines.py [--repeats 3] [--gen-prompts 48] [--device auto]
        [--configs batch8,ort-batch8] [--gen-configs gen-batch8,ct2-gen-batch8] [--gen-model FILE.gguf]

Nothing is downloaded: HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set. Without data/model, run
`make model` first.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from vs_pipeline import judged, pipeline_pass  # vs_pipeline.py's baseline pass and verdict (this folder is on the path)

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import sources
from gpucost_mlflow.core.inputs.corpus import read_corpus
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import Variant, get_variant
from gpucost_mlflow.core.judging import judge, verdicts
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.names import MFU_USEFUL, OUTPUT_TOKENS_PER_S, USEFUL_FLOP_PER_S
from gpucost_mlflow.execution import models, peak, runner
from gpucost_mlflow.execution.timing import Stopwatch, no_sync
from gpucost_mlflow.flow import workloads
from gpucost_mlflow.flow.preparation import child_spec
from gpucost_mlflow.workloads import encoder_flops, engine_cache
from gpucost_mlflow.workloads.generation import output as gen_output
from gpucost_mlflow.workloads.generation.task import render

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "projects/variants.yaml"
PIPELINE = "pipeline"
PAUSE_S = 0.5  # before each timed run, outside the clock: the other workers' threads have stopped spinning
TORCH_PRODUCTS = ("aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm", "aten::_addmm_activation",
                  "aten::mkldnn_linear", "aten::_mkldnn_linear")
ORT_PRODUCTS = ("MatMul", "Gemm", "FusedMatMul", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
                "QGemm", "Attention", "MultiHeadAttention", "QAttention", "GroupQueryAttention")


@dataclass
class Config:
    """One measured configuration: its variant (shipped, or built here from one) and where it came from."""

    name: str
    variant: Variant
    origin: str
    work_key: tuple = ()  # configurations with the same engine and numerics share one loaded Work


def variant_named(variants_file: Path, name: str, base: str, **changes) -> Config:
    """The variant of this name from the variants file when it declares it, else the shipped `base` with `changes`
    (the settings a proposed variant would have)."""
    try:
        return Config(name, get_variant(variants_file, name), variants_file.name)
    except GpucostError:
        shipped = get_variant(SHIPPED, base)
        built = replace(shipped, name=name, series="", reference="", settings=shipped.settings.changed(**changes))
        return Config(name, built, f"{base} + {', '.join(f'{k}={v}' for k, v in changes.items())}")


def load(config: Config, variants_file: Path, model_path: Path, protocol, corpus: Path, device, workdir: Path):
    """The configuration's Work, as the pass's child gets it: the launcher's workload and engine records in the spec,
    runner.load_workload choosing the engine's implementation. Returns the Work, the engine record, the load seconds
    and the launcher's workload record."""
    variant = config.variant
    described = workloads.describe(variant, variants_file, model_path, protocol)
    record = workloads.engine_record(variant, described.model["revision"], device.type)
    spec = child_spec(corpus, model_path, workdir, variant.settings, protocol,
                      workload=described.record.with_engine(record))
    started = time.perf_counter()
    work = runner.load_workload(spec, device)
    return work, record, time.perf_counter() - started, described.record


def warm_up(work, corpus: Path, settings: dict, device, inputs: int) -> None:
    """The runner's warm-up: the corpus's first inputs with the variant's own batching."""
    ids, texts = runner.read_texts(str(corpus))
    work.process(ids[:inputs], texts[:inputs], work.tokenizer, work.model, settings, device)


def rotated(order: list[str], repeat: int) -> list[str]:
    shift = repeat % len(order)
    return order[shift:] + order[:shift]


def sync_of(device):
    return torch.cuda.synchronize if device.type == "cuda" else no_sync


def host_line() -> str:
    """The CPU's model name and its SIMD flags that matter for these kernels."""
    name, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name") and not name:
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
              if f in flags]
    return f"{os.cpu_count()} CPU(s) {name}; flags: {' '.join(wanted)}"


def versions() -> str:
    import ctranslate2
    import onnxruntime
    import transformers

    return (f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}, "
            f"onnxruntime {onnxruntime.__version__}, ctranslate2 {ctranslate2.__version__}")


# --- (1) classification -------------------------------------------------------------------------------------------


def chosen(configs: list[Config], names: str) -> list[Config]:
    """The configurations named (comma-separated) and the section's reference, the first; all of them when none is."""
    wanted = {name for name in names.split(",") if name}
    unknown = wanted - {c.name for c in configs}
    if unknown:
        raise SystemExit(f"unknown configuration(s) {', '.join(sorted(unknown))}; this section measures "
                         + ", ".join(c.name for c in configs))
    return [c for i, c in enumerate(configs) if not wanted or i == 0 or c.name in wanted]


def classification(args) -> dict:
    """Section (1); returns what section (3) needs."""
    protocol = load_protocol(args.protocol)
    info = models.describe_model(args.model)
    rows = read_corpus(args.corpus, labels=info.labels).rows
    v = args.variants
    configs = chosen([
        variant_named(v, "batch8", "batch8"),
        variant_named(v, "batch64-lengthgrouped", "batch8", batch_size=64, length_grouping="sorted"),
        variant_named(v, "batch32-bf16-lengthgrouped", "batch8", batch_size=32, precision="bf16",
                      length_grouping="sorted"),
        variant_named(v, "batch64-bf16-lengthgrouped", "batch8", batch_size=64, precision="bf16",
                      length_grouping="sorted"),
        variant_named(v, "ort-batch8", "ort-batch8"),
        variant_named(v, "ort-batch64-lengthgrouped", "ort-batch8", batch_size=64, length_grouping="sorted"),
        variant_named(v, "ort-batch8-int8", "ort-batch8-int8"),
        variant_named(v, "ort-batch64-lengthgrouped-int8", "ort-batch8-int8", batch_size=64,
                      length_grouping="sorted"),
    ], args.configs)
    settings = {c.name: c.variant.settings for c in configs}
    reference = settings["batch8"]
    model = args.model.relative_to(ROOT) if args.model.is_relative_to(ROOT) else args.model
    print(f"== (1) classification: {model} on {args.corpus.name} ({len(rows)} inputs), protocol "
          f"{args.protocol.name}, device {args.device}")
    for config in configs:
        if not config.origin.endswith(".yaml"):
            print(f"  {config.name}: not in {v.name}; built as {config.origin}")
    workers, failed = start_workers("classification", configs, "batch8", args, args.model, args.protocol,
                                    args.corpus, v)
    if "batch8" not in workers:
        raise SystemExit(f"the reference batch8 did not load, nothing to compare with: {'; '.join(failed)}")
    order = [name for name in [PIPELINE] + [c.name for c in configs] if name in workers]
    times, predicted = timed_runs(order, workers, args.repeats)

    median = {name: statistics.median(values) for name, values in times.items()}
    acceptance = protocol.acceptance
    metric = acceptance.main_metric
    # The protocol's bars, and its reference bars (agreement, metric difference) against the fp32 reference applied
    # to every configuration whatever its numerics: the launcher's verdict (vs_pipeline.judged).
    ref_judged = judged(rows, info.labels, protocol, predicted["batch8"])
    ref_quality = ref_judged.quality
    against = judge.Reference("batch8", dict(ref_quality), predicted["batch8"])
    rows_out = {}
    for name in order:
        verdict = ref_judged if name == "batch8" else judged(rows, info.labels, protocol, predicted[name], against)
        quality = verdict.quality
        failed = [c for c in verdict.checks if not c.passed]
        rows_out[name] = {
            "name": name, "median": median[name], "min": min(times[name]), "max": max(times[name]),
            "ratio": median[PIPELINE] / median[name],
            "agreement": verdicts.agreement(predicted[name], predicted["batch8"]),
            "difference": quality[metric] - ref_quality[metric], "metric": quality[metric],
            "passes": not failed, "failed": failed,
            "utilisation": {} if name == PIPELINE else workers[name].call("utilisation", name, median[name]),
            "precision": peak.precision_of(settings[name]) if name != PIPELINE else "fp32",
            "engine": "pipeline" if name == PIPELINE else settings[name].engine,
        }

    print(f"\n  {len(predicted[PIPELINE])} inputs, {args.repeats} repetitions, max length {reference.max_length}; "
          f"{versions()}")
    print(f"  bars ({args.protocol.name}): {metric} >= {acceptance.threshold}, every bucket >= "
          f"{acceptance.per_bucket_threshold}; vs torch batch8 fp32: agreement >= {acceptance.min_label_agreement}, "
          f"|{metric} difference| <= {acceptance.max_metric_difference} (whole corpus and every bucket)")
    print(f"  {'configuration':31} {'engine':11} {'median s':>8} {'min':>7} {'max':>7} {'pipeline/x':>10} "
          f"{'agreement':>9} {'dF1':>8} {'bars':>5} {'useful GFLOP/s':>14} {'MFU useful':>10} {'peak':>13}")
    for name in order:
        row = rows_out[name]
        metrics = row["utilisation"].get("metrics", {})
        mfu = f"{metrics[MFU_USEFUL]:10.3f}" if MFU_USEFUL in metrics else f"{'-' if name == PIPELINE else 'no peak':>10}"
        rate = f"{metrics[USEFUL_FLOP_PER_S] / 1e9:14.1f}" if USEFUL_FLOP_PER_S in metrics else f"{'':>14}"
        peak_cell = row["precision"] if MFU_USEFUL in metrics else ("no peak cached" if name != PIPELINE else "")
        print(f"  {name:31} {row['engine']:11} {row['median']:8.3f} {row['min']:7.3f} {row['max']:7.3f} "
              f"{row['ratio']:10.3f} {100 * row['agreement']:8.2f}% {row['difference']:+8.4f} "
              f"{'yes' if row['passes'] else 'NO':>5} {rate} {mfu} {peak_cell:>13}")
    for name in order:
        if rows_out[name]["failed"]:
            print(f"  {name} fails: " + "; ".join(f"{c.name}: {c.reason}" for c in rows_out[name]["failed"]))
        missing = rows_out[name]["utilisation"].get("missing_measurements", {})
        if MFU_USEFUL in missing:
            print(f"  {name}: no peak cached ({missing[MFU_USEFUL]})")
    identical = predicted[PIPELINE] == predicted["batch8"]
    print(f"  pipeline vs torch batch8 (identical settings): predictions identical: {identical}")
    config = json.loads((args.model / "config.json").read_text(encoding="utf-8"))
    return {"rows": rows_out, "workers": workers, "model_config": config}


# --- (2) generation -------------------------------------------------------------------------------------------------


def cut_texts(texts: list[str], tokenizer, max_length: int) -> list[str]:
    """Each text cut at max_length tokens, as the pass's prompts_of cuts it."""
    counted = tokenizer(texts, add_special_tokens=False, return_attention_mask=False)["input_ids"]
    return [tokenizer.decode(ids[:max_length]) if len(ids) > max_length else text for text, ids in zip(texts, counted)]


def generation_pipeline_pass(pipe, corpus: Path, settings: Settings, task, labels: list[str], sync):
    """What a user would write: read the file, put each text in the prompt (one chat message when the protocol says
    so), generate greedily with the pipeline at the same batch size and new-token budget, keep the new text."""
    clock = Stopwatch(sync)
    clock.start()
    ids, texts = runner.read_texts(str(corpus))
    prompts = [render(task.prompt, text, labels) for text in cut_texts(texts, pipe.tokenizer, settings.max_length)]
    inputs = [[{"role": "user", "content": p}] for p in prompts] if task.chat_template else prompts
    outputs = pipe(inputs, batch_size=settings.batch_size, max_new_tokens=task.max_new_tokens, do_sample=False,
                   num_beams=1, return_full_text=False)
    generated = [output[0]["generated_text"] for output in outputs]
    seconds = clock.stop()
    return dict(zip(ids, generated)), seconds


def generation(args) -> None:
    """Section (2)."""
    protocol = load_protocol(args.gen_protocol)
    task = protocol.task
    source = args.gen_corpus if args.gen_corpus.exists() else args.corpus
    workdir = Path(tempfile.mkdtemp(prefix="gpucost-engines-gen-"))
    corpus = workdir / f"generation-{args.gen_prompts}.jsonl"
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()][: args.gen_prompts]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gguf = args.gen_model or sources.package_path(*sources.DEFAULT_GENERATION_PACKAGE)
    warm = min(protocol.warmup["inputs"], len(lines))
    print(f"\n== (2) generation: {gguf.name} (dequantised cache) on the first {len(lines)} inputs of {source.name}, "
          f"protocol {args.gen_protocol.name} ({task.max_new_tokens} new tokens, greedy, chat template "
          f"{task.chat_template}), device {args.device}, warm-up {warm} inputs")
    configs = [variant_named(SHIPPED, name, name) for name in
               ("gen-batch8", "gen-batch8-lengthgrouped", "ct2-gen-batch8", "ct2-gen-batch8-int8", "ct2-gen-batch8-bf16")]
    configs = chosen(configs + [variant_named(SHIPPED, "ct2-gen-batch8-lengthgrouped", "ct2-gen-batch8",
                                              length_grouping="sorted")], args.gen_configs)
    names = [c.name for c in configs]
    for config in configs:
        if not config.origin.endswith(".yaml"):
            print(f"  {config.name}: not in {SHIPPED.name}; built as {config.origin}")
    workers, failed = start_workers("generation", configs, "gen-batch8", args, gguf, args.gen_protocol, corpus,
                                    SHIPPED)
    if "gen-batch8" not in workers:
        raise SystemExit(f"the reference gen-batch8 did not load, nothing to compare with: {'; '.join(failed)}")
    order = [name for name in [PIPELINE] + names if name in workers]
    times, outputs = timed_runs(order, workers, args.repeats)

    median = {name: statistics.median(values) for name, values in times.items()}
    ref = outputs["gen-batch8"]
    ref_back = gen_output.GenerationReadBack(list(ref.ids), dict(zip(ref.ids, ref.texts)),
                                             dict(zip(ref.ids, ref.tokens)))
    reference_pass = gen_output.GenerationReference("gen-batch8", ref_back)
    bar = protocol.acceptance.bar
    tokenizer = models.load_tokenizer(Path(workloads.describe(configs[0].variant, SHIPPED, gguf, protocol)
                                           .record.cache))
    print(f"\n  {len(lines)} prompts, {args.repeats} repetitions; {versions()}")
    print(f"  bars ({args.gen_protocol.name}) vs torch gen-batch8: exact match >= {bar.min_exact_match}, "
          f"token agreement >= {bar.min_token_agreement}")
    print(f"  {'configuration':22} {'median s':>8} {'min':>7} {'max':>7} {'tokens':>6} {'tokens/s':>8} "
          f"{'pipeline/x':>10} {'exact':>7} {'tokens=':>7} {'bars':>5} {'prefill s':>9} {'decode s':>8} "
          f"{'MFU useful':>10}")
    for name in order:
        if name == PIPELINE:
            texts = outputs[name]
            same = sum(1 for ident, text in ref_back.texts.items() if texts.get(ident) == text)
            counted = sum(min(len(tokenizer(text, add_special_tokens=False)["input_ids"]) + 1, task.max_new_tokens)
                          for text in texts.values())
            print(f"  {name:22} {median[name]:8.3f} {min(times[name]):7.3f} {max(times[name]):7.3f} {counted:6d} "
                  f"{counted / median[name]:8.1f} {1.0:10.3f} {100 * same / len(ref_back.texts):6.1f}% {'n/a':>7}")
            continue
        done = outputs[name]
        back = gen_output.GenerationReadBack(list(done.ids), dict(zip(done.ids, done.texts)),
                                             dict(zip(done.ids, done.tokens)))
        checks, _, agreed = gen_output.reference_checks(back, reference_pass, protocol.acceptance)
        use = workers[name].call("utilisation", name, median[name]).get("metrics", {})
        tokens = int(sum(sum(answers) for _, answers in done.shapes))
        mfu = f"{use[MFU_USEFUL]:10.3f}" if MFU_USEFUL in use else f"{'no peak':>10}"
        print(f"  {name:22} {median[name]:8.3f} {min(times[name]):7.3f} {max(times[name]):7.3f} {tokens:6d} "
              f"{use.get(OUTPUT_TOKENS_PER_S, 0):8.1f} {median[PIPELINE] / median[name]:10.3f} "
              f"{100 * agreed[gen_output.MAIN_METRIC]:6.1f}% {100 * agreed[gen_output.TOKEN_AGREEMENT]:6.1f}% "
              f"{'yes' if all(c.passed for c in checks) else 'NO':>5} {sum(done.prefill_s):9.3f} "
              f"{sum(done.decode_s):8.3f} {mfu}")
    print("  prefill / decode s: the pass's own split, of the first run; CTranslate2's prefill ends at the first new "
          "token of a batch's shortest prompt, the longer prompts' remaining tokens are fed in its decode steps")
    print("  pipeline: tokens counted by re-encoding its text (+1 end token when shorter than the budget); exact match "
          "compares its text with torch gen-batch8's; token agreement needs token ids, which it does not return")
    stop_workers(workers)


# --- (3) what bounds the fastest configuration that passes ------------------------------------------------------


def profile_torch(work, corpus: Path, settings: dict, device) -> tuple[float, dict]:
    """One pass under torch.profiler: its wall seconds and the self seconds of every op."""
    from torch.profiler import ProfilerActivity, profile

    ids, texts = runner.read_texts(str(corpus))
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])) as prof:
        started = time.perf_counter()
        work.process(ids, texts, work.tokenizer, work.model, settings, device)
        wall = time.perf_counter() - started
    return wall, {event.key: event.self_cpu_time_total / 1e6 for event in prof.key_averages()}


def profile_ort(work, record: dict, corpus: Path, settings: dict, device) -> tuple[float, dict]:
    """One pass on a twin of the pass's session (the same cached export, provider and optimisation level) with ORT's
    profiler on: its wall seconds and the kernel seconds of every op type."""
    import onnxruntime

    from gpucost_mlflow.workloads import ort

    path = ort.exported(None, record, "logits")[0]  # the cache holds it: nothing is exported here
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.enable_profiling = True
    options.profile_file_prefix = str(Path(tempfile.mkdtemp(prefix="gpucost-ort-profile-")) / "ort")
    session = onnxruntime.InferenceSession(str(path), options, providers=[record.options["provider"]])
    ids, texts = runner.read_texts(str(corpus))
    work.process(ids[:32], texts[:32], work.tokenizer, session, settings, device)  # warm-up, as the pass's
    started = time.perf_counter()
    work.process(ids, texts, work.tokenizer, session, settings, device)
    wall = time.perf_counter() - started
    events = json.loads(Path(session.end_profiling()).read_text(encoding="utf-8"))
    by_op: dict[str, float] = {}
    for event in events:
        if event.get("cat") == "Node" and str(event.get("name", "")).endswith("_kernel_time"):
            op = event.get("args", {}).get("op_name", "?")
            by_op[op] = by_op.get(op, 0.0) + event.get("dur", 0) / 1e6
    return wall, by_op


def product_rate(engine: str, precision: str, rows: int, k: int, n: int, device) -> float:
    """FLOP/s of one [rows, k] x [k, n] product as the engine runs it: torch F.linear at the precision, or an ORT
    MatMul (fp32) on the CPU provider with every optimisation on; the median of 10 timed runs after 3 warm-ups."""
    if engine == "onnxruntime":
        import numpy as np
        import onnx
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper

        weight = numpy_helper.from_array(np.random.default_rng(0).random((k, n), dtype=np.float32), "w")
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "product",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])], [weight])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = min(model.ir_version, onnx.IR_VERSION, 10)
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        x = np.random.default_rng(1).random((rows, k), dtype=np.float32)

        def run():
            session.run(["y"], {"x": x})
    else:
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
        x = torch.rand(rows, k, dtype=dtype, device=device)
        w = torch.rand(n, k, dtype=dtype, device=device)
        sync = sync_of(device)

        def run():
            torch.nn.functional.linear(x, w)
            sync()
    for _ in range(3):
        run()
    seconds = []
    for _ in range(10):
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
    return 2 * rows * k * n / statistics.median(seconds)


def bound(row: dict, settings: dict, work, result, record: dict, model_config: dict, corpus: Path, device,
          title: str) -> None:
    """Where one configuration's pass time goes, against the cached peak of its precision: one profiled pass splits
    the median pass into the useful FLOPs at peak rate (= useful MFU), the padded FLOPs at peak rate, the time the
    matrix-product and attention kernels take beyond their FLOPs at peak rate, and the time outside them; the
    largest share other than the useful one is what bounds it. The product kernels are also timed alone at the
    pass's mean padded batch shape."""
    name = row["name"]
    metrics = row["utilisation"].get("metrics", {})
    shape = encoder_flops.encoder_shape(model_config)
    count = encoder_flops.count(shape, result.batch_lengths())
    engine = settings.engine
    print(f"\n  {title}: {name} ({engine}, {row['precision']}, batch {settings.batch_size}, "
          f"grouping {settings.length_grouping})")
    print(f"    median {row['median']:.3f} s, {row['ratio']:.2f} x the pipeline, agreement "
          f"{100 * row['agreement']:.2f} %, macro-F1 difference {row['difference']:+.4f}, bars "
          f"{'passed' if row['passes'] else 'failed'}")
    found = peak.lookup(device, row["precision"])[0]
    if MFU_USEFUL not in metrics or found is None:
        print(f"    useful MFU: no peak cached for {row['precision']} on this device (run `gpucost doctor --peak`)")
        return
    mfu, top_rate = metrics[MFU_USEFUL], found.flop_per_s
    print(f"    useful MFU {mfu:.3f} of the measured {row['precision']} peak ({top_rate / 1e9:.0f} GFLOP/s, "
          f"{found.operation or 'dense matmul'}, n={found.size}): {'reaches' if mfu >= 0.5 else 'does not reach'} 0.5")
    if engine == "onnxruntime":
        wall, by_op = profile_ort(work, record, corpus, settings, device)
        linear = sum(seconds for op, seconds in by_op.items() if op in ORT_PRODUCTS)
        attention = 0.0  # unfused attention products are MatMul nodes too: counted with the products
    else:
        wall, by_op = profile_torch(work, corpus, settings, device)
        linear = sum(seconds for op, seconds in by_op.items() if op in TORCH_PRODUCTS)
        attention = sum(seconds for op, seconds in by_op.items() if "scaled_dot_product" in op)
    top = sorted(by_op.items(), key=lambda item: -item[1])[:8]
    print(f"    profiled pass {wall:.3f} s; top {engine} ops by self time: "
          + ", ".join(f"{op} {seconds:.3f} s" for op, seconds in top))
    scale = row["median"] / wall  # the profile's shares applied to the median pass
    linear_flops = count.padded_tokens * encoder_flops.per_token_flops(shape) + count.sequences * (
        2 * shape.hidden * shape.hidden + 2 * shape.hidden * shape.labels)
    attention_flops = count.padded - linear_flops
    if engine == "onnxruntime":
        linear_flops, attention_flops = count.padded, 0
    parts = {
        "useful FLOPs at peak rate (= useful MFU)": count.useful / top_rate,
        "padding: FLOPs on pad tokens at peak rate": (count.padded - count.useful) / top_rate,
        ("matrix-product kernels (projections, feed-forward" + (", attention" if engine == "onnxruntime" else "")
         + ") beyond their FLOPs at peak rate"): linear * scale - linear_flops / top_rate,
    }
    if engine != "onnxruntime":
        parts["attention kernel (scaled_dot_product) beyond its FLOPs at peak rate"] = (
            attention * scale - attention_flops / top_rate)
    parts["outside the products (tokenizing, padding, layer norms, GELU, softmax, adds, copies, dispatch)"] = (
        row["median"] - (linear + attention) * scale)
    print(f"    the median pass of {row['median']:.3f} s, split with the profile's shares:")
    for part, seconds in parts.items():
        print(f"      {100 * seconds / row['median']:6.1f} %  {seconds:7.3f} s  {part}")
    products_rate = linear_flops / (linear * scale) if linear else 0.0
    print(f"    inside the product kernels: {products_rate / 1e9:.0f} GFLOP/s = {products_rate / top_rate:.2f} of the "
          f"peak" + (f"; inside the attention kernel: {attention_flops / (attention * scale) / 1e9:.0f} GFLOP/s"
                     if attention else ""))
    if any(seconds < 0 for seconds in parts.values()):
        print("    (a negative share: those kernels run faster than the cached peak, which torch's F.linear / mm set)")
    if settings.quantization != "none":
        print("    (no product timing alone: the probe runs unquantized products)")
    else:
        square = probe_products(engine, row["precision"], count, shape, found, device)
        if square > 1.05 * top_rate:
            print(f"    the cached {row['precision']} peak is torch's rate; {engine} runs the same n={found.size} square "
                  f"{square / top_rate:.2f} x faster: against that rate the useful MFU is {mfu * top_rate / square:.3f}")
    losses = {part: seconds for part, seconds in parts.items() if not part.startswith("useful")}
    worst = max(losses, key=losses.get)
    print(f"    bounded mainly by: {worst} ({100 * losses[worst] / row['median']:.1f} % of the pass)")


def probe_products(engine: str, precision: str, count, shape, found, device) -> float:
    """The model's product shapes timed alone at the pass's mean padded batch, and the engine at the peak's square
    (returned, in FLOP/s)."""
    top_rate = found.flop_per_s
    rows_per_batch = max(1, round(count.padded_tokens / max(count.batches, 1)))
    h, i = shape.hidden, shape.intermediate
    probes = [(h, h), (h, i), (i, h)]
    rates = [product_rate(engine, precision, rows_per_batch, k, n, device) for k, n in probes]
    weights = [4 * h * h, 2 * h * i, 2 * h * i]  # FLOPs per token of each product shape
    effective = sum(weights) / sum(w / r for w, r in zip(weights, rates))
    square = product_rate(engine, precision, found.size, found.size, found.size, device)
    print(f"    the same products timed alone at the pass's mean padded batch ({rows_per_batch} token rows): "
          + ", ".join(f"{k}x{n} {r / 1e9:.0f}" for (k, n), r in zip(probes, rates))
          + f" GFLOP/s; weighted {effective / 1e9:.0f} GFLOP/s = {effective / top_rate:.2f} of the peak; "
          f"{engine} at the peak's own n={found.size} square: {square / 1e9:.0f} GFLOP/s = {square / top_rate:.2f}")
    return square


def summary(section: dict) -> None:
    """Section (3): the fastest configuration that passes, analysed in its worker; then the fastest passing ORT one."""
    rows, workers = section["rows"], section["workers"]
    accepted = [(row["median"], name) for name, row in rows.items() if name != PIPELINE and row["passes"]]
    print("\n== (3) the fastest classification configuration that passes the bars")
    if not accepted:
        print("  no configuration passes the protocol's bars")
        return
    _, fastest = min(accepted)
    workers[fastest].call("bound", rows[fastest], section["model_config"], "fastest passing")
    ort_rows = [(row["median"], name) for name, row in rows.items() if row["engine"] == "onnxruntime"]
    ort_passing = [item for item in ort_rows if rows[item[1]]["passes"]]
    if ort_passing and min(ort_passing)[1] != fastest:
        name = min(ort_passing)[1]
        workers[name].call("bound", rows[name], section["model_config"],
                           "fastest passing on ONNX Runtime, for its kernels")
    elif ort_rows and not ort_passing:
        print("  no ONNX Runtime configuration passes the bars")


# --- the worker processes: one configuration's engine each, as a pass's child ----------------------------------------


class Worker:
    """In its own process: the Work of one engine at one numerics (shared by the configurations that differ only in
    batching), warmed up for each, optionally with the pipeline on the same model; measures on request."""

    def __init__(self, job: dict):
        self.section, self.configs = job["section"], {c.name: c for c in job["configs"]}
        self.corpus, self.device = Path(job["corpus"]), models.resolve_device(job["device"])
        self.model_path = Path(job["model"])
        self.sync = sync_of(self.device)
        self.settings = {name: c.variant.settings for name, c in self.configs.items()}
        self.protocol = load_protocol(Path(job["protocol"]))
        first = next(iter(self.configs.values()))
        runner.tokenizer_parallelism(self.settings[first.name])  # as in the pass's child
        workdir = Path(tempfile.mkdtemp(prefix="gpucost-engines-"))
        self.work, self.record, seconds, described = load(first, Path(job["variants"]), Path(job["model"]),
                                                          self.protocol, self.corpus, self.device, workdir)
        s = self.settings[first.name]
        self.loaded = (f"{s.engine} {s.precision} quantization {s.quantization} (pid "
                       f"{os.getpid()}, for {', '.join(self.configs)}): loaded in {seconds:.1f} s")
        if self.record.cache:
            marker = engine_cache.cached(Path(self.record.cache)) or {}
            self.loaded += (f"; engine cache {Path(self.record.cache).name} present at start: "
                            f"{self.record.cache_present_at_start} (its export or conversion took "
                            f"{marker.get('convert_s', 0):.1f} s); options "
                            + ", ".join(f"{k}={self.record.options[k]}" for k in ("provider", "compute_type")
                                        if k in self.record.options))
        self.warm = min(self.protocol.warmup["inputs"], len(runner.read_texts(str(self.corpus))[0]))
        for name in self.configs:
            warm_up(self.work, self.corpus, self.settings[name], self.device, self.warm)
        self.results: dict[str, object] = {}
        self.labels = models.describe_model(self.model_path).labels if self.section == "classification" else []
        self.pipe = None
        if job["pipeline"]:
            self._pipeline(first.name, described)

    def _pipeline(self, name: str, described) -> None:
        """transformers.pipeline on the same model object, warmed up on the same first inputs."""
        from transformers import pipeline
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        settings = self.settings[name]
        if self.section == "classification":
            self.pipe = pipeline("text-classification", model=self.work.model, tokenizer=self.work.tokenizer,
                                 device=self.device)
            texts = runner.read_texts(str(self.corpus))[1][: self.warm]
            self.pipe(texts, batch_size=settings.batch_size, truncation=True, max_length=settings.max_length)
            return
        # the folder the causal LM was loaded from: a GGUF file's dequantised cache, else the model folder
        tokenizer = models.load_tokenizer(Path(described.cache) if getattr(described, "gguf", None)
                                          else self.model_path)
        tokenizer.padding_side = "left"
        self.pipe = pipeline("text-generation", model=self.work.model, tokenizer=tokenizer, device=self.device)
        lines = [line for line in self.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
        warm = Path(tempfile.mkdtemp(prefix="gpucost-engines-warm-")) / "warm.jsonl"
        warm.write_text("\n".join(lines[: self.warm]) + "\n", encoding="utf-8")
        generation_pipeline_pass(self.pipe, warm, settings, self.protocol.task, list(self.protocol.labels),
                                 self.sync)

    def measure(self, name: str):
        """One timed run: the pipeline (its labels or texts by id), or the pass's runner.measure on the Work (labels by
        id for classification, the Generated outputs for generation). Returns (seconds, outputs)."""
        time.sleep(PAUSE_S)
        if name == PIPELINE:
            settings = self.settings[next(iter(self.configs))]
            if self.section == "classification":
                return pipeline_pass(self.pipe, self.corpus, settings.batch_size, settings.max_length,
                                     self.sync)[::-1]
            return generation_pipeline_pass(self.pipe, self.corpus, settings, self.protocol.task,
                                            list(self.protocol.labels), self.sync)[::-1]
        processing = runner.Processing(self.work.process, self.work.tokenizer, self.work.model, self.settings[name],
                                       self.device)
        result, seconds = runner.measure(str(self.corpus), processing, self.sync)
        self.results.setdefault(name, result)
        if self.section == "classification":
            return seconds, {ident: self.labels[k] for ident, k in zip(result.ids, result.labels)}
        return seconds, result

    def utilisation(self, name: str, seconds: float) -> dict:
        """The pass's own FLOP count and MFU (workloads' utilisation) for this configuration at these seconds."""
        return self.work.utilisation(self.results[name], seconds)

    def bound(self, row: dict, model_config: dict, title: str) -> None:
        name = row["name"]
        bound(row, self.settings[name], self.work, self.results[name], self.record, model_config, self.corpus,
              self.device, title)


def serve(conn, job: dict) -> None:
    """A worker process's loop: load, report, then answer (command, arguments) until "stop"; every failure is sent
    back as its traceback."""
    sys.stdout.reconfigure(line_buffering=True)
    try:
        worker = Worker(job)
        conn.send(("ok", worker.loaded))
    except Exception:  # noqa: BLE001 - reported by the parent, which goes on without this configuration
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        command, arguments = conn.recv()
        if command == "stop":
            return
        try:
            conn.send(("ok", getattr(worker, command)(*arguments)))
        except Exception:  # noqa: BLE001
            conn.send(("error", traceback.format_exc()))


class Remote:
    """The parent's handle on a worker process."""

    def __init__(self, job: dict):
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, job), daemon=True)
        self.process.start()
        self.names = [c.name for c in job["configs"]] + ([PIPELINE] if job["pipeline"] else [])

    def ready(self) -> str:
        """The worker's load line, or RuntimeError with its traceback when it could not load."""
        status, value = self.conn.recv()
        if status != "ok":
            self.process.join()
            raise RuntimeError(value)
        return value

    def call(self, command: str, *arguments):
        self.conn.send((command, arguments))
        status, value = self.conn.recv()
        if status != "ok":
            raise RuntimeError(value)
        return value

    def stop(self) -> None:
        if self.process.is_alive():
            self.conn.send(("stop", ()))
        self.process.join()


def start_workers(section: str, configs: list[Config], pipeline_with: str, args, model: Path, protocol: Path,
                  corpus: Path, variants: Path) -> tuple[dict[str, Remote], list[str]]:
    """One worker per engine and numerics (configurations that differ only in batching share one), all loading at
    once; returns the worker of every configuration name (and of the pipeline), and the reasons of those that could
    not load."""
    groups: dict[tuple, list[Config]] = {}
    for config in configs:
        s = config.variant.settings
        key = (s.engine, s.precision, s.quantization, s.attention, s.compile)
        groups.setdefault(key, []).append(config)
    remotes = [Remote({"section": section, "configs": members, "pipeline": pipeline_with in [c.name for c in members],
                       "variants": str(variants), "model": str(model), "protocol": str(protocol),
                       "corpus": str(corpus), "device": args.device}) for members in groups.values()]
    by_name, failed = {}, []
    for remote in remotes:
        try:
            print(f"  worker {remote.ready()}")
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[-1]
            failed.append(f"{', '.join(remote.names)}: not measured: {reason}")
            print(f"  {failed[-1]}")
            continue
        by_name.update({name: remote for name in remote.names})
    return by_name, failed


def stop_workers(workers: dict[str, Remote]) -> None:
    for remote in {id(r): r for r in workers.values()}.values():
        remote.stop()


def timed_runs(order: list[str], workers: dict[str, Remote], repeats: int) -> tuple[dict, dict]:
    """Every configuration once per repetition, the order rotated from one repetition to the next: the seconds of
    every run and the outputs of the first."""
    times: dict[str, list[float]] = {name: [] for name in order}
    outputs: dict[str, object] = {}
    for repeat in range(repeats):
        turn = rotated(order, repeat)
        for name in turn:
            seconds, produced = workers[name].call("measure", name)
            times[name].append(seconds)
            if name in outputs and isinstance(produced, dict) and produced != outputs[name]:
                print(f"  warning: {name} outputs changed between repetitions")
            outputs.setdefault(name, produced)
        print(f"  repeat {repeat + 1} ({' -> '.join(turn)}):\n    "
              + "  ".join(f"{name} {times[name][-1]:.3f}" for name in order))
    return times, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gen-prompts", type=int, default=48, help="Generation prompts (0: skip generation)")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus/comparison.jsonl")
    parser.add_argument("--model", type=Path, default=ROOT / "data/model")
    parser.add_argument("--protocol", type=Path, default=ROOT / "projects/protocol.yaml")
    parser.add_argument("--gen-protocol", type=Path, default=ROOT / "projects/protocol-generation.yaml")
    parser.add_argument("--gen-corpus", type=Path, default=ROOT / "data/corpus/generation-200.jsonl",
                        help="the generation prompts' source (default: the demo's slice when made, else --corpus)")
    parser.add_argument("--gen-model", type=Path, default=None, help="default: the packaged SmolLM2 GGUF file")
    parser.add_argument("--configs", default="", help="comma-separated classification configurations (default: "
                        "all; batch8, the reference, always runs)")
    parser.add_argument("--gen-configs", default="", help="comma-separated generation configurations (default: all; "
                        "gen-batch8, the reference, always runs)")
    proposed = ROOT / "reports/gpucost-demo-variants-proposed.yaml"
    parser.add_argument("--variants", type=Path, default=proposed if proposed.exists() else SHIPPED,
                        help="Where the classification variants are read from when declared (default: the demo's "
                             "proposed third series when `make demo` wrote it, else projects/variants.yaml)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args()
    if not (args.model / "config.json").exists():
        raise SystemExit(f"{args.model}: no demo classifier (run `make model`)")
    sys.stdout.reconfigure(line_buffering=True)  # the workers print into the same file
    print(f"host: {host_line()}")
    section = classification(args)
    try:
        if args.gen_prompts > 0:
            generation(args)
        summary(section)
    finally:
        stop_workers(section["workers"])


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"(benchmark wall time {time.perf_counter() - started:.0f} s)")
