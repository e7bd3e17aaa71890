"""Lanes: one pass over N devices of a machine at once, each lane a fixed slice of the corpus (pure functions).

A variant's `lanes: N` deals the corpus ids, sorted as text, round-robin over N lanes: lane k takes the ids at
sorted positions k, k + N, k + 2N, ... and keeps them in the corpus file's order. The same corpus gives the same
slices on every machine, sizes differ by at most one, and each slice's fingerprint goes into the manifest.

The lanes' figures become the pass's by kind: the measured time is the span from the first lane's clock start to
the last lane's clock stop; counts (FLOPs, tokens, joules) add up; rates are recounted from those sums over the
span; a device's peak memory is the largest lane's (each lane has its own device); a figure this module does not
name is left empty with a reason (each lane's own value stays in the verdict's `lanes` records).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpucost_mlflow.core.inputs.fingerprints import corpus_fingerprint
from gpucost_mlflow.core.names import (
    MFU_PADDED,
    MFU_USEFUL,
    OUTPUT_TOKENS_PER_S,
    PADDED_FLOP_PER_S,
    PADDING_SHARE,
    PEAK_FLOP_PER_S,
    TOKENS_GENERATED,
    TOKENS_PROMPT,
    TOKENS_REAL,
    USEFUL_FLOP_PER_S,
)

SLICING = ("ids sorted as text, dealt round-robin: lane k takes sorted positions k, k+N, k+2N, ...; "
           "each lane keeps the corpus file's order")
START = ("lanes load and warm up apart (each on the first inputs of its own slice), then start their measured "
         "passes together")
STAGES = "load_s, warmup_s: the slowest lane's (the pass waits for it); export_s: the slowest lane's plus the merge"

SUMMED = ("flops_useful", "flops_padded", TOKENS_REAL, "tokens_padded", "energy_j", TOKENS_PROMPT, TOKENS_GENERATED,
          "flops_prefill_useful", "flops_prefill_padded", "flops_decode_useful", "flops_decode_padded")
LARGEST = ("device_event_s",)  # each lane's device time inside its own clock: the longest is the cross-check
AGREED = ("device_sm_clock_mhz_at_start", "device_memory_clock_mhz_at_start", "device_power_limit_w")
RECOUNTED = (PADDING_SHARE, USEFUL_FLOP_PER_S, PADDED_FLOP_PER_S, PEAK_FLOP_PER_S, MFU_USEFUL, MFU_PADDED,
             OUTPUT_TOKENS_PER_S)


FOLDER = "lane-{}"  # lane k's files (its corpus slice, outputs, batch counter) in the pass's folder


def batches(corpus_size: int, batch_size: int, lanes: int = 1) -> int:
    """The measured pass's batches over every lane: each lane batches its own slice (sizes differ by at most one)."""
    sizes = [corpus_size // lanes + (1 if k < corpus_size % lanes else 0) for k in range(lanes)]
    return sum(-(-size // batch_size) for size in sizes)


def lane_of(ids: Sequence[str], lanes: int) -> dict[str, int]:
    """The lane of every id: sorted as text, dealt round-robin."""
    return {ident: position % lanes for position, ident in enumerate(sorted(ids))}


def slices(rows: Sequence[dict], lanes: int) -> list[list[dict]]:
    """The corpus rows of each lane, in the corpus file's order."""
    assigned = lane_of([row["id"] for row in rows], lanes)
    result: list[list[dict]] = [[] for _ in range(lanes)]
    for row in rows:
        result[assigned[row["id"]]].append(row)
    return result


def record(parts: Sequence[Sequence[dict]], devices: Sequence[str], device_names: Sequence[str], threads: int,
           clock: str) -> dict:
    """The manifest's `lanes` section: the rule, each slice (size and fingerprint) with its device, threads, clock."""
    return {
        "count": len(parts),
        "slicing": SLICING,
        "slices": [{"lane": k, "device": devices[k], "device_name": device_names[k], "size": len(rows),
                    "fingerprint": corpus_fingerprint(rows)} for k, rows in enumerate(parts)],
        "threads_per_lane": threads,
        "clock": clock,
        "start": START,
        "stages": STAGES,
    }


def span_s(bounds: Sequence[tuple[int | None, int | None]]) -> float | None:
    """Seconds from the first lane's clock start to the last lane's clock stop (nanosecond reads of one
    system-wide monotonic clock); None when a lane has no reading."""
    if not bounds or any(start is None or stop is None for start, stop in bounds):
        return None
    return (max(stop for _, stop in bounds) - min(start for start, _ in bounds)) / 1e9


def failure_reason(failed: Sequence[tuple[int, str]], lanes: int) -> str:
    """The pass's failure reason: the first failed lane's, named, then the other failed lanes'. It still starts
    with the lane's own reason, so "out of memory" and "interrupted" read the same as for a one-lane pass."""
    (first, reason), *others = failed
    more = "".join(f"; lane {k}: {why}" for k, why in others)
    return f"{reason} (lane {first} of {lanes}{more})"


def lane_reasons(reasons: Sequence[tuple[int, str]], lanes: int) -> str:
    """One reason for what lanes lack: theirs when every lane lacks it for the same reason, else each lane named."""
    distinct = {why for _, why in reasons}
    if len(reasons) == lanes and len(distinct) == 1:
        return distinct.pop()
    return "; ".join(f"lane {k}: {why}" for k, why in reasons)


def largest(peaks: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each memory counter's largest peak over the lanes (every lane has its own device: peaks never add)."""
    result: dict[str, float] = {}
    for lane in peaks:
        for key, value in lane.items():
            result[key] = max(value, result.get(key, value))
    return result


def combine_tags(tags: Sequence[dict[str, str]]) -> dict[str, str]:
    """Each run tag with the lanes' distinct values in lane order (one value when they agree)."""
    values: dict[str, list[str]] = {}
    for lane in tags:
        for key, value in lane.items():
            if value not in values.setdefault(key, []):
                values[key].append(value)
    return {key: ", ".join(found) for key, found in values.items()}


def combine_metrics(metrics: Sequence[dict[str, float]], missing: Sequence[dict[str, str]],
                    pass_s: float | None) -> tuple[dict[str, float], dict[str, str]]:
    """The pass's metrics and missing measurements from its lanes': summed, largest, agreed or recounted over
    `pass_s` as this module names them; any other figure is left empty with the reason."""
    keys = list(dict.fromkeys(key for lane in (*metrics, *missing) for key in lane))
    combined: dict[str, float] = {}
    absent: dict[str, str] = {}
    for key in keys:
        values = [lane.get(key) for lane in metrics]
        lacking = [(k, missing[k].get(key, "not measured")) for k, value in enumerate(values) if value is None]
        if lacking:
            absent[key] = lane_reasons(lacking, len(metrics))
        elif key in SUMMED:
            combined[key] = float(sum(values))
        elif key in LARGEST:
            combined[key] = float(max(values))
        elif key in AGREED:
            if len(set(values)) == 1:
                combined[key] = float(values[0])
            else:
                absent[key] = "differs between lanes: " + ", ".join(f"lane {k} {v:g}" for k, v in enumerate(values))
        elif key not in RECOUNTED:
            absent[key] = "not combined over lanes; each lane's value is in the verdict's lanes records"
    recounted = _recount(combined, metrics, pass_s)
    for key in RECOUNTED:
        if key in absent:
            continue
        if key in recounted:
            combined[key] = recounted[key]
        elif key in keys:
            absent[key] = "not recounted over lanes: the pass did not complete"
    return combined, absent


def _recount(summed: dict[str, float], metrics: Sequence[dict[str, float]], pass_s: float | None) -> dict[str, float]:
    """Padding share from the summed FLOPs; rates over the pass's span; MFU against the lanes' peaks added up."""
    result: dict[str, float] = {}
    if TOKENS_GENERATED in summed and pass_s and pass_s > 0:
        result[OUTPUT_TOKENS_PER_S] = summed[TOKENS_GENERATED] / pass_s
    useful, padded = summed.get("flops_useful"), summed.get("flops_padded")
    if useful is None or padded is None:
        return result
    if all(PADDING_SHARE in lane for lane in metrics):
        result[PADDING_SHARE] = 1 - useful / padded if padded else 0.0
    if not pass_s or pass_s <= 0:
        return result
    result[USEFUL_FLOP_PER_S], result[PADDED_FLOP_PER_S] = useful / pass_s, padded / pass_s
    peaks = [lane.get(PEAK_FLOP_PER_S) for lane in metrics]
    if all(peaks):
        result[PEAK_FLOP_PER_S] = float(sum(peaks))
        result[MFU_USEFUL] = result[USEFUL_FLOP_PER_S] / result[PEAK_FLOP_PER_S]
        result[MFU_PADDED] = result[PADDED_FLOP_PER_S] / result[PEAK_FLOP_PER_S]
    return result
