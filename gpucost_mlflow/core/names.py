"""The pass metrics gpucost records, named once: the child, the rules, the store's side and the report import them.

Pure and import-free, so a workload's child (which may not import `tracking/`) names a metric as the reader does.
Tags, params and artifact names are `tracking/schema.py`'s; a workload's own quality figures are its output's.
"""

from __future__ import annotations

import math

# Stage timings of a pass, in seconds: loading, warm-up, the measured pass, judging, the export of its files.
LOAD_S = "load_s"
WARMUP_S = "warmup_s"
PASS_S = "pass_s"
EVAL_S = "eval_s"
EXPORT_S = "export_s"
TIMINGS = (LOAD_S, WARMUP_S, PASS_S, EVAL_S, EXPORT_S)
IMPORT_S = "import_s"  # a forked child's imports, timed once by the starter it was forked from; counted in load_s
# The measured clock's bounds on the host's epoch clock: what overlap between passes is judged on.
MEASURED_FROM = "measured_from_epoch_s"
MEASURED_UNTIL = "measured_until_epoch_s"
MEASURED_SPAN = (MEASURED_FROM, MEASURED_UNTIL)
# FLOPs of the pass's forward passes (core/measurement/flops.py) per second of pass_s; mfu_* as fractions of the
# device's cached dense-matmul peak at the pass's precision (absent, with a reason, when none is cached).
USEFUL_FLOP_PER_S = "useful_flop_per_s"
PADDED_FLOP_PER_S = "padded_flop_per_s"
MFU_USEFUL = "mfu_useful"
MFU_PADDED = "mfu_padded"
PADDING_SHARE = "padding_share"
PEAK_FLOP_PER_S = "peak_flop_per_s"
UTILISATION = (USEFUL_FLOP_PER_S, PADDED_FLOP_PER_S, MFU_USEFUL, MFU_PADDED, PADDING_SHARE, PEAK_FLOP_PER_S)
# Throughputs of an accepted pass a user can sort and chart.
INPUTS_PER_S = "inputs_per_s"
TOKENS_PER_S = "tokens_per_s"
TOKENS_REAL = "tokens_real"  # one corpus's real (unpadded) tokens, where FLOPs were counted
# What the judge counts of a pass's ids, and how far a failed pass got.
EXPECTED_IDS = "expected_ids"
OBSERVED_IDS = "observed_ids"
COMPLETED_ENTRIES = "completed_entries"
ELAPSED_UNTIL_FAILURE_S = "elapsed_until_failure_s"
# Quality against gold labels (core/judging/quality.py): what a protocol's main_metric may name.
ACCURACY = "accuracy"
MACRO_F1 = "macro_f1"
# Answers that changed against the reference, where gold labels exist (core/judging/flips.py): right in the
# reference and wrong in the pass (lost), the reverse (gained), and the exact McNemar p-value (absent when
# none changed).
# Label agreement with the reference and its exact interval at the protocol's confidence (core/judging/bounds.py).
LABEL_AGREEMENT = "label_agreement"
LABEL_AGREEMENT_LOW = "label_agreement_low"
LABEL_AGREEMENT_HIGH = "label_agreement_high"
FLIPS_LOST = "flips_lost"
FLIPS_GAINED = "flips_gained"
FLIPS_P = "flips_mcnemar_p"
# A generation pass's measured clock split: prompt processing to the first new token, then the decoding.
PREFILL_S = "prefill_s"
DECODE_S = "decode_s"
# What a pass that generates counts: prompt and new tokens, and new tokens per second of the measured pass.
TOKENS_PROMPT = "tokens_prompt"
TOKENS_GENERATED = "tokens_generated"
OUTPUT_TOKENS_PER_S = "output_tokens_per_s"
# An engine's export or conversion of the model, in seconds, on the pass that ran it (the cache serves the others):
# part of that pass's load_s, and counted once per rental by the forecast.
CONVERT_S = "convert_s"
SERVER_START_S = "server_start_s"  # an endpoint pass's started server: its time to answer /health, inside load_s
# An endpoint pass's tags, written by its child (workloads/*/with_openai.py) and read as facts (tracking/schema.py):
ENDPOINT_TAG = "gpucost.endpoint"  # host, served model and server version: part of the configuration's identity
ENDPOINT_FAILED_TAG = "gpucost.endpoint.failed_requests"  # inputs with no answer after the retries, and the first why
# What an encoder pass read: the real (unpadded) tokens of every input, the count an endpoint would bill as input.
TOKENS_INPUT = "tokens_input"
# CPU seconds other processes used during the measured part, and their share of the machine's CPU time then.
OTHER_CPU_S = "other_cpu_s"
OTHER_CPU_SHARE = "other_cpu_share"
# A measured part repeated inside one clock (the protocol's min_measured_s): how many times the corpus was processed,
# the clock's whole span (pass_s is this over the repetitions: one corpus), and whether every repetition's outputs
# were identical to the first's (1 or 0; the first repetition's are exported and judged).
REPETITIONS = "repetitions"
MEASURED_TOTAL_S = "measured_total_s"
REPETITIONS_IDENTICAL = "repetitions_identical"
# Each repetition's own lap (metric history `lap_s`, one step per repetition from 1) and the first's alone: one corpus
# timed as a pass without repetitions times it, the population stability and separation compare (docs/costs.md).
LAP_S = "lap_s"
FIRST_LAP_S = "first_lap_s"
# Every benchmark pass's clock holds at least MIN_LAPS laps (issue 62): the first pays each new input shape's setup
# (cuDNN attention plans, compiled graphs, allocator growth), the median of the later ones is the steady rate the
# decision reads; the first minus the steady (never below 0) is the setup a worker pays once per process, and the
# distinct (batch, padded length) shapes the pass ran say how many there were.
MIN_LAPS = 2
STEADY_LAP_S = "steady_lap_s"
# The one duration every surface shows and the decision reads, under one name (issue 66): the report's columns and
# figure, the runs view's sort and the confirmation's comparison; `pass_s` (the clock's span over its laps, the
# first lap's setup included) and the first lap are named for what they are where shown.
STEADY_LAP = "steady lap"
# On a confirmation run: its rate (inputs per second at its steady lap) over the slowest benchmark pass's, the rate
# the committed plan is sized at (1.05: 5 % faster; under 1: not confirmed), written by the report that judged it.
RATE_VS_SLOWEST = "rate_vs_slowest_benchmark"
SHAPE_SETUP_S = "shape_setup_s"
DISTINCT_SHAPES = "distinct_shapes"
COLD_SHAPES_RATIO = 1.5  # a first lap above this many steady laps: the pass is flagged cold_shapes
_step_mark = "@"  # `lap_s@3` in a pass's metrics: the value of metric lap_s at step 3 (tracking/writer.py logs it so)


def stepped(name: str, step: int) -> str:
    """The key of one step of a metric's history in a pass's metrics."""
    return f"{name}{_step_mark}{step}"


def split_step(key: str) -> tuple[str, int]:
    """A pass metric's name and step: (lap_s, 3) for `lap_s@3`, (key, 0) for a plain metric."""
    name, mark, step = key.partition(_step_mark)
    return (name, int(step)) if mark and step.isdigit() else (key, 0)
# The idle wait before warm-up (the protocol's cooldown_s), the board's idle power measured during it, and a pass's
# energy net of that idle power over its pass_s.
COOLDOWN_S = "cooldown_waited_s"
IDLE_POWER_W = "idle_power_w"
ENERGY_NET_J = "energy_net_j"
# How busy the pass's own device was during the measured part: the child's share of the machine's CPU time, and the
# GPU's mean utilisation from its driver's samples (fractions); under the protocol's min_utilisation: starved.
CPU_UTILISATION = "cpu_utilisation"
GPU_UTILISATION = "gpu_utilisation"
# The board's temperature at the start and end of the measured part, and its SM clock at the end.
TEMPERATURE_START_C = "device_temperature_c_at_start"
TEMPERATURE_END_C = "device_temperature_c_at_end"
SM_CLOCK_END_MHZ = "device_sm_clock_mhz_at_end"
# Other processes holding the pass's GPU during the measured part (NVML / amdsmi), the largest count seen.
OTHER_GPU_PROCESSES = "other_gpu_processes"


# What a logged measurement keeps (MLflow shows a metric as logged, 9.281454475 in every table): five significant
# digits, finer than any pass's run-to-run spread (a millisecond of a 10 s pass); whole numbers (counts) exactly; the
# measured clock's epoch bounds to the millisecond, which overlap between passes is judged on.
SHOWN_DIGITS = 5


def shown(key: str, value: float) -> float:
    """The value of a pass metric as logged: see SHOWN_DIGITS."""
    if split_step(key)[0] in MEASURED_SPAN:
        return round(value, 3)
    if not math.isfinite(value) or value == int(value):
        return value
    return float(f"{value:.{SHOWN_DIGITS}g}")
