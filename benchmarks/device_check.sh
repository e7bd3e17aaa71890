#!/usr/bin/env bash
# One run that proves the device path of gpucost on the machine it runs on (docs/benchmarks.md, "Device check"):
# the corpus and model (built when missing), `gpucost doctor --peak`, the cold/warm probe of bf16 attention, a
# campaign of fp32 and bf16 at batch 8 and at a GPU-sized batch (bf16 also with cuDNN attention off and padded to a
# multiple of 32), its memory peaks and stack, a real out-of-memory pass, a 2-lane pass when two GPUs exist, the
# engines (ONNX Runtime, CTranslate2, vLLM where installed) against their torch references, and the report.
#
#   benchmarks/device_check.sh            on a GPU machine: the 1,000-input corpus, about 8 minutes on one H200
#   benchmarks/device_check.sh --small    anywhere: a 32-input slice, a model trained for seconds, 1 pass per
#                                         variant; on the CPU the out-of-memory error is injected (GPUCOST_FAULT)
#
# Everything it writes (tracking store, artifacts, report, logs, summary.txt) goes under $OUT when set, else
# reports/device-check-<UTC time>/. It installs nothing and downloads nothing: it needs a Python with torch and
# this project's dependencies ($GPUCOST_PYTHON when set, else .venv/bin/python, else python3). Exit 0 when every
# check passed, 1 when one failed, 2 when it could not start.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SMALL=0
for arg in "$@"; do
  case "$arg" in
    --small) SMALL=1 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "device_check: unknown argument '$arg' (--small, --help)" >&2; exit 2 ;;
  esac
done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
WORK=${OUT:-$ROOT/reports/device-check-$STAMP}
mkdir -p "$WORK/logs"
WORK=$(cd "$WORK" && pwd)
SUMMARY=$WORK/summary.txt
: >"$SUMMARY"
PASSED=0 FAILED=0 SKIPPED=0
STARTED=$SECONDS

say() { echo "$*" | tee -a "$SUMMARY"; }
record() {  # record RESULT STEP SECONDS DETAIL
  case "$1" in PASS) PASSED=$((PASSED + 1)) ;; FAIL) FAILED=$((FAILED + 1)) ;; SKIP) SKIPPED=$((SKIPPED + 1)) ;; esac
  say "$(printf '%-4s %-20s %5ss  %s' "$1" "$2" "$3" "$4")"
}
last_line() { grep -v -e '^[[:space:]]*$' -e '^MLflow UI:' "$1" | tail -n 1 | cut -c1-300; }
finish() {
  local code=$?
  [ "$code" -eq 0 ] && [ "$FAILED" -gt 0 ] && code=1
  say "device_check: $PASSED checks passed, $FAILED failed, $SKIPPED skipped in $((SECONDS - STARTED)) s;" \
    "everything is in $WORK"
  exit "$code"
}
trap finish EXIT
stop() { say "device_check: $*"; exit 2; }

# run STEP CMD...: the command's output to logs/STEP.log; PASS with its last line, or FAIL with it.
run() {
  local step=$1 began=$SECONDS; shift
  if "$@" >"$WORK/logs/$step.log" 2>&1; then
    record PASS "$step" $((SECONDS - began)) "$(last_line "$WORK/logs/$step.log")"
  else
    record FAIL "$step" $((SECONDS - began)) "$(last_line "$WORK/logs/$step.log") (logs/$step.log)"
    return 1
  fi
}
# prepare STEP CMD...: as run, but the rest cannot go on without it.
prepare() { run "$@" || stop "cannot go on without step '$1'"; }

# --- a Python with torch and the project; nothing is installed here (the GPU machine is offline) ---
PY=""
for candidate in "${GPUCOST_PYTHON:-}" "$ROOT/.venv/bin/python" python3; do
  [ -n "$candidate" ] || continue
  if PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$candidate" -c "import torch, transformers, mlflow, yaml, gpucost_mlflow.cli" \
       >/dev/null 2>&1; then
    PY=$candidate
    break
  fi
done
[ -n "$PY" ] || stop "no Python with torch, transformers, mlflow and this project: none of \$GPUCOST_PYTHON," \
  ".venv/bin/python, python3 imports them; run 'make install' where the package registry is reachable" \
  "(this script installs nothing)"

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export MLFLOW_TRACKING_URI="sqlite:///$WORK/mlflow.db"
export GPUCOST_SPOOL="$WORK/spool" GPUCOST_PEAK_CACHE="$WORK/peak.json"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false PYTHONUNBUFFERED=1
unset GPUCOST_FAULT MLFLOW_RUN_ID MLFLOW_EXPERIMENT_NAME MLFLOW_EXPERIMENT_ID
cd "$WORK"  # MLflow puts a new experiment's artifacts under ./mlruns
gpucost() { "$PY" -m gpucost_mlflow "$@"; }
helper() { "$PY" "$ROOT/benchmarks/device_check.py" "$@"; }

GPUS=$(helper gpus 2>&1) || stop "cannot list the devices: $GPUS"
read -r BACKEND NGPUS MEMORY DEVICE_NAME <<<"$GPUS"
MODE=$([ "$SMALL" -eq 1 ] && echo small || echo full)
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
say "device_check $MODE, $STAMP: $BACKEND x $NGPUS ($DEVICE_NAME), python $PY, commit $COMMIT"
if [ "$BACKEND" = cpu ] && [ "$SMALL" -eq 0 ]; then
  stop "no GPU visible: the full check is for a GPU machine; --small runs it on the CPU"
fi

# --- corpus and model: the repository's data/ (as make corpus / make model), or a small slice under $WORK ---
VARIANTS=$ROOT/projects/variants.yaml
if [ "$SMALL" -eq 1 ]; then
  DATA=$WORK/small
  prepare corpus gpucost corpus build --size 32 --tuning-size 24 --out "$DATA/corpus"
  prepare model gpucost model prepare --corpus-dir "$DATA/corpus" --out "$DATA/model"
  QUALITY=(--any-quality) PASSES=1
else
  DATA=$ROOT/data
  if [ -f "$DATA/corpus/comparison.jsonl" ]; then record PASS corpus 0 "present: $DATA/corpus"
  else prepare corpus gpucost corpus build --out "$DATA/corpus"; fi
  if [ -f "$DATA/model/config.json" ]; then record PASS model 0 "present: $DATA/model"
  else prepare model gpucost model prepare --corpus-dir "$DATA/corpus" --out "$DATA/model"; fi
  QUALITY=(--bucket-bar-of "$ROOT/projects/protocol-demo.yaml") PASSES=1
fi
CORPUS=$DATA/corpus/comparison.jsonl MODEL=$DATA/model PROTOCOL=$WORK/protocol.yaml
GUARDS=()  # a GPU's protocol repeats a short corpus inside the clock and idles before warm-up (docs/protocol.md)
if [ "$BACKEND" != cpu ]; then GUARDS=(--guards); fi
prepare protocol helper protocol --source "$ROOT/projects/protocol.yaml" --corpus "$CORPUS" --passes "$PASSES" \
  ${QUALITY[@]+"${QUALITY[@]}"} ${GUARDS[@]+"${GUARDS[@]}"} --out "$PROTOCOL"

# --- the stack and the device's dense-matmul peak (MFU needs it) ---
if [ "$SMALL" -eq 1 ]; then run doctor gpucost doctor --peak --min-time 0.05 || true
else run doctor gpucost doctor --peak --min-time 0.3 || true; fi

# --- cold against warm bf16 forwards over padded widths 10..80, PyTorch's default attention and cuDNN's off ---
if [ "$SMALL" -eq 1 ]; then run cold-warm "$PY" "$ROOT/benchmarks/cold_warm.py" --model "$MODEL" --small \
  --out "$WORK/cold-warm.json" || true
else run cold-warm "$PY" "$ROOT/benchmarks/cold_warm.py" --model "$MODEL" --out "$WORK/cold-warm.json" || true; fi

# --- the campaign: fp32 and bf16 at batch 8 and at a GPU-sized batch, bf16 with cuDNN attention off and padded to a
#     multiple of 32 tokens; one pass each (a pass is mostly its process start) ---
EXP=device-check-$STAMP
CHECK_VARIANTS=$WORK/variants.yaml
helper check-variants --variants-file "$VARIANTS" --model "$MODEL" --corpus "$CORPUS" --backend "$BACKEND" \
  --memory-bytes "$MEMORY" --out "$CHECK_VARIANTS" >"$WORK/logs/variants.log" 2>&1 || \
  stop "the check's variants: $(last_line "$WORK/logs/variants.log") (logs/variants.log)"
SERIES=$(head -n 1 "$WORK/logs/variants.log")
record PASS variants 0 "$SERIES"
while IFS= read -r note; do
  case "$note" in SKIP\ *) note=${note#SKIP }; record SKIP "${note%%:*}" 0 "${note#*: }" ;; *) say "     $note" ;; esac
done < <(tail -n +2 "$WORK/logs/variants.log")
REFERENCE=$(helper reference --protocol "$PROTOCOL") || stop "reference: $REFERENCE"
run campaign gpucost campaign --experiment "$EXP" --variants "$SERIES" --passes "$PASSES" --corpus "$CORPUS" \
  --model "$MODEL" --variants-file "$CHECK_VARIANTS" --protocol "$PROTOCOL" || true
run campaign-check helper check-campaign --experiment "$EXP" --variants "$SERIES" --passes "$PASSES" \
  --reference "$REFERENCE" || true
if [ "$BACKEND" = cpu ]; then
  record SKIP gpu-measurements 0 "passes ran on the CPU: energy_j, device_event_s and the device UUID are GPU checks"
  record SKIP guards 0 "passes ran on the CPU: repetitions, cooldown and board state are checked on a GPU"
  record SKIP gpu-stack 0 "passes ran on the CPU: allocated and reserved peaks, driver, CUDA and cuDNN are a GPU's"
else
  run gpu-measurements helper check-device-measurements --experiment "$EXP" || true
  run guards helper check-guards --experiment "$EXP" || true
  run gpu-stack helper check-stack --experiment "$EXP" || true
fi

# --- out of memory: real on a GPU (a batch whose attention scores exceed the device), injected on the CPU ---
# failing_pass STEP HOW CMD...: a pass that must end as a failed row (gpucost pass exits 1); exit 0 or 2 is a FAIL.
failing_pass() {
  local step=$1 how=$2 began=$SECONDS code=0; shift 2
  "$@" >"$WORK/logs/$step.log" 2>&1 || code=$?
  local said; said=$(last_line "$WORK/logs/$step.log")
  if [ "$code" -eq 1 ]; then record PASS "$step" $((SECONDS - began)) "$how: $said"
  else record FAIL "$step" $((SECONDS - began)) "$how: exit $code (a failed pass exits 1): $said"; fi
}
OOM_EXP=$EXP-oom
if [ "$BACKEND" = cpu ]; then
  # A real out-of-memory on the CPU would take the host's memory from everything else on it: injected instead.
  failing_pass oom-pass "injected (CPU), GPUCOST_FAULT=oom@2" env GPUCOST_FAULT=oom@2 "$PY" -m gpucost_mlflow pass \
    --variant "$REFERENCE" --corpus "$CORPUS" --model "$MODEL" --variants "$VARIANTS" --protocol "$PROTOCOL" \
    --experiment "$OOM_EXP"
  run oom-check helper check-oom --experiment "$OOM_EXP" --injected || true
elif run oom-inputs helper oom-inputs --model "$MODEL" --corpus "$CORPUS" --variants-file "$VARIANTS" \
       --protocol "$PROTOCOL" --memory-bytes "$MEMORY" --out "$WORK/oom"; then
  failing_pass oom-pass real gpucost pass --variant oversized --corpus "$WORK/oom/oversized.jsonl" --model "$MODEL" \
    --variants "$WORK/oom/variants.yaml" --protocol "$WORK/oom/protocol.yaml" --experiment "$OOM_EXP"
  run oom-check helper check-oom --experiment "$OOM_EXP" --variants-file "$WORK/oom/variants.yaml" || true
  rm -f "$WORK/oom/oversized.jsonl"  # tens of MB of repeated text; oom-inputs writes it again from the corpus
fi

# --- lanes: two devices in one pass (two GPUs; on the CPU its lanes run on the CPU) ---
LANES_EXP=$EXP-lanes
if ! helper knows-lanes >"$WORK/logs/lanes.log" 2>&1; then
  record SKIP lanes 0 "$(last_line "$WORK/logs/lanes.log")"
elif [ "$BACKEND" != cpu ] && [ "$NGPUS" -lt 2 ]; then
  record SKIP lanes 0 "$NGPUS GPU visible, a lanes pass needs 2"
elif run lanes-inputs helper lanes-inputs --variants-file "$VARIANTS" --protocol "$PROTOCOL" \
       --out "$WORK/lanes/variants.yaml"; then
  for variant in "$REFERENCE" batch8-lanes2; do
    run "lanes-$variant" gpucost pass --variant "$variant" --corpus "$CORPUS" --model "$MODEL" \
      --variants "$WORK/lanes/variants.yaml" --protocol "$PROTOCOL" --experiment "$LANES_EXP" || true
  done
  run lanes-check helper check-lanes --experiment "$LANES_EXP" || true
fi

# --- engines: the classifier on ONNX Runtime (the CUDA or ROCm provider on a GPU), generation on CTranslate2 and
#     vLLM, each judged against its torch reference; an engine not installed here is a SKIP with its refusal line ---
# engine_pass STEP CMD...: exit 0 PASS; exit 2 with the not-installed refusal SKIP; anything else FAIL.
engine_pass() {
  local step=$1 began=$SECONDS code=0; shift
  "$@" >"$WORK/logs/$step.log" 2>&1 || code=$?
  local said; said=$(last_line "$WORK/logs/$step.log")
  if [ "$code" -eq 0 ]; then record PASS "$step" $((SECONDS - began)) "$said"
  elif [ "$code" -eq 2 ] && grep -q "is not installed here" "$WORK/logs/$step.log"; then record SKIP "$step" 0 "$said"
  else record FAIL "$step" $((SECONDS - began)) "exit $code: $said (logs/$step.log)"; fi
}
ENG_EXP=$EXP-engines
# What the device tool cannot carry (onnxruntime-gpu, the generation model's GGUF package) is a SKIP with its reason.
ORT=1
if [ "$BACKEND" != cpu ] && ! helper ort-gpu >"$WORK/logs/ort-gpu.log" 2>&1; then
  ORT=0
  record SKIP engines-ort 0 "$(last_line "$WORK/logs/ort-gpu.log")"
fi
if [ "$ORT" -eq 1 ]; then
  run "engine-$REFERENCE" gpucost pass --variant "$REFERENCE" --corpus "$CORPUS" --model "$MODEL" \
    --variants "$VARIANTS" --protocol "$PROTOCOL" --experiment "$ENG_EXP" || true
  for variant in ort-batch8 ort-batch8-int8; do
    engine_pass "engine-$variant" "$PY" -m gpucost_mlflow pass --variant "$variant" --corpus "$CORPUS" \
      --model "$MODEL" --variants "$VARIANTS" --protocol "$PROTOCOL" --experiment "$ENG_EXP"
  done
fi
GEN_CORPUS=$WORK/generation.jsonl GEN_PROTOCOL=$WORK/protocol-generation.yaml
# 80 generation inputs on a GPU: 72 identical outputs are the fewest that show the 0.95 exact-match bar by its interval
GEN_SIZE=$([ "$SMALL" -eq 1 ] && echo 8 || echo 80)
if ! helper generation-model >"$WORK/logs/generation-model.log" 2>&1; then
  record SKIP engines-generation 0 "$(last_line "$WORK/logs/generation-model.log")"
elif run gen-inputs gpucost corpus slice --corpus "$CORPUS" --size "$GEN_SIZE" --out "$GEN_CORPUS" &&
   run gen-protocol helper protocol --source "$ROOT/projects/protocol-generation.yaml" --corpus "$GEN_CORPUS" \
     --passes 1 --out "$GEN_PROTOCOL"; then
  run engine-gen-batch8 gpucost pass --variant gen-batch8 --corpus "$GEN_CORPUS" --variants "$VARIANTS" \
    --protocol "$GEN_PROTOCOL" --experiment "$ENG_EXP-generation" || true
  for variant in ct2-gen-batch8 ct2-gen-batch8-int8 vllm-gen-batch8; do
    engine_pass "engine-$variant" "$PY" -m gpucost_mlflow pass --variant "$variant" --corpus "$GEN_CORPUS" \
      --variants "$VARIANTS" --protocol "$GEN_PROTOCOL" --experiment "$ENG_EXP-generation"
  done
  run engines-generation-check helper check-engines --experiment "$ENG_EXP-generation" --backend "$BACKEND" || true
fi
if [ "$ORT" -eq 1 ]; then run engines-check helper check-engines --experiment "$ENG_EXP" --backend "$BACKEND" || true; fi

# --- the report of the campaign ---
run report gpucost report --experiment "$EXP" --out "$WORK/report" --protocol "$PROTOCOL" \
  --variants-file "$CHECK_VARIANTS" || true
run report-check helper check-report --dir "$WORK/report" --variants "$SERIES" || true
