#!/usr/bin/env bash
# On the device tool's GPU machine, in the repository root: the device check in one call, from what
# `make device-bundle` packed (docs/benchmarks.md, "Device check").
#
#   bash benchmarks/device_run.sh stage   keep the part(s) this call carried (.device-bundle/part-N) under
#                                         /tmp/gpucost-bundle; the machine keeps them while it stays warm
#   bash benchmarks/device_run.sh         the same, then join and verify every part (sha256), unpack, install the
#                                         wheels offline (pip --no-index --no-deps into /tmp/gpucost-bundle/site),
#                                         put data/model and data/corpus in place and run benchmarks/device_check.sh
#
# The check's folder is /tmp/device-check; summary.txt and device-check.tgz (its logs, report, cold/warm timings,
# variants and protocol) are copied to $OUT, which the tool brings back. Exit: the check's, 2 when a part is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STORE=${GPUCOST_BUNDLE_STORE:-/tmp/gpucost-bundle}
PARTS=$STORE/parts
CHECK_DIR=${GPUCOST_CHECK_DIR:-/tmp/device-check}
LIMIT_S=${GPUCOST_CHECK_LIMIT_S:-540}  # the check's own limit: inside a call of 600 s, room to pack what it wrote
PY=${GPUCOST_PYTHON:-python3}
mkdir -p "$PARTS"

for folder in "$ROOT"/.device-bundle/part-*; do
  [ -d "$folder" ] || continue
  cp "$folder"/* "$PARTS"/
  echo "device_run: staged $(basename "$folder") ($(du -sh "$folder" | cut -f1))"
done
[ -f "$PARTS/bundle.sha256" ] || { echo "device_run: no part here: carry .device-bundle/part-N (make device-bundle)"; exit 2; }
wanted=$(grep -c 'payload.tgz\.' "$PARTS/bundle.sha256")
present=$(cd "$PARTS" && ls payload.tgz.* 2>/dev/null | wc -l)
echo "device_run: $present of $wanted part(s) here"
[ "${1:-}" = stage ] && exit 0
if [ "$present" -ne "$wanted" ]; then
  absent=$(cd "$PARTS" && grep -o 'payload.tgz\.[0-9]*' bundle.sha256 | while read -r name; do
    [ -f "$name" ] || echo "part-$((10#${name##*.}))"; done | tr '\n' ' ')
  echo "device_run: missing ${absent}: the machine went back since its call; make every call again, in order"
  exit 2
fi
(cd "$PARTS" && grep 'payload.tgz\.' bundle.sha256 | sha256sum -c --quiet -) ||
  { echo "device_run: a part does not match its checksum"; exit 2; }
whole=$(grep ' payload.tgz$' "$PARTS/bundle.sha256" | cut -d' ' -f1)
if [ "$(cat "$STORE/unpacked" 2>/dev/null)" != "$whole" ]; then
  rm -rf "$STORE/payload" "$STORE/site"
  mkdir -p "$STORE/payload"
  cat "$PARTS"/payload.tgz.* | tar -xz -C "$STORE/payload"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$STORE/site" \
    "$STORE"/payload/wheels/*.whl
  "$PY" -m compileall -q -j 0 "$STORE/site" "$ROOT/gpucost_mlflow" >/dev/null || true  # once, not in every pass
  echo "$whole" >"$STORE/unpacked"
fi
mkdir -p "$ROOT/data/corpus"
[ -f "$ROOT/data/model/config.json" ] || cp -r "$STORE/payload/data/model" "$ROOT/data/"
cp -n "$STORE"/payload/data/corpus/* "$ROOT/data/corpus/"
echo "device_run: $(ls "$STORE"/payload/wheels | wc -l) wheels installed in $STORE/site; data/model, data/corpus in place"

export PYTHONPATH="$STORE/site${PYTHONPATH:+:$PYTHONPATH}" GPUCOST_PYTHON="$PY"
rm -rf "$CHECK_DIR"
code=0
OUT_SAVED=${OUT:-}
OUT=$CHECK_DIR timeout "$LIMIT_S" bash "$ROOT/benchmarks/device_check.sh" || code=$?
[ "$code" -eq 124 ] && echo "device_run: the check passed its ${LIMIT_S} s limit and was stopped" | tee -a "$CHECK_DIR/summary.txt"
if [ -n "$OUT_SAVED" ]; then
  cp "$CHECK_DIR/summary.txt" "$OUT_SAVED/" 2>/dev/null || true
  name=$(basename "$CHECK_DIR")
  tar -czf "$OUT_SAVED/device-check.tgz" -C "$(dirname "$CHECK_DIR")" --exclude="$name/oom" --exclude="$name/mlruns" \
    --exclude="$name/spool" "$name" 2>/dev/null || true
fi
exit "$code"
