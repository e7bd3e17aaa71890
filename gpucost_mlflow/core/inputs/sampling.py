"""Drawing corpora from a labelled source: length buckets cut at the source's token-count quantiles, stratified
order-independent samples (comparison, tuning, confirmation), and a corpus's bucket-keeping slice.

Pure Python: the token counter is passed in by the caller, so this module never loads a tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.corpus import BUCKETS, SourceRow
from gpucost_mlflow.core.inputs.fingerprints import corpus_fingerprint, order_digest, stable_rank

DEFAULT_BUCKET_SIZES = {"short": 600, "medium": 300, "long": 100}
# Bucket bounds are the source's token-count quantiles matching the 600/300/100 mix. A protocol may declare other
# buckets (names, shortest first, and their counts): `gpucost corpus build --protocol` cuts and fills them the same way.
BUCKET_QUANTILES = (0.6, 0.9)


def quantiles_of(mix: dict[str, int]) -> tuple[float, ...]:
    """The cumulative shares at which a mix's buckets end (all but the last): (0.6, 0.9) for 600/300/100."""
    total, running, cuts = sum(mix.values()), 0, []
    for weight in list(mix.values())[:-1]:
        running += weight
        cuts.append(running / total)
    return tuple(cuts)


def bucket_bounds(token_counts: Sequence[int], quantiles: Sequence[float] = BUCKET_QUANTILES,
                  names: Sequence[str] = BUCKETS) -> dict:
    """Token-count bounds (inclusive) of each bucket, shortest first, from the source's quantiles."""
    ordered = sorted(token_counts)
    cuts = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in quantiles]
    lows = [ordered[0], *(cut + 1 for cut in cuts)]
    highs = [*cuts, ordered[-1]]
    return {name: [low, high] for name, low, high in zip(names, lows, highs)}


def bucket_of(count: int, bounds: dict) -> str:
    """The bucket whose inclusive bounds hold this token count (the last one beyond them all)."""
    for name, (_, high) in bounds.items():
        if count <= high:
            return name
    return list(bounds)[-1]


def allocate(total: int, weights: dict[str, int]) -> dict[str, int]:
    """Split total across keys proportionally to weights (largest remainder, ties by key)."""
    whole = sum(weights.values())
    if whole == 0:
        return {key: 0 for key in weights}
    exact = {key: total * w / whole for key, w in weights.items()}
    counts = {key: int(value) for key, value in exact.items()}
    rest = total - sum(counts.values())
    for key in sorted(exact, key=lambda k: (-(exact[k] - counts[k]), k))[:rest]:
        counts[key] += 1
    return counts


def stratified_sample(rows: Sequence[dict], sizes: dict[str, int], seed: int) -> list[dict]:
    """Draw sizes[bucket] rows per bucket, classes in the bucket's source proportions, order-independent."""
    chosen = []
    for bucket, size in sizes.items():
        in_bucket = [row for row in rows if row["bucket"] == bucket]
        if len(in_bucket) < size:
            raise GpucostError(
                f"bucket '{bucket}' has {len(in_bucket)} inputs left, {size} requested: use a smaller --size"
            )
        by_label: dict[str, list[dict]] = {}
        for row in in_bucket:
            by_label.setdefault(row["label"], []).append(row)
        quota = allocate(size, {label: len(members) for label, members in by_label.items()})
        for label, members in sorted(by_label.items()):
            members.sort(key=lambda r: stable_rank(seed, r["id"]))
            chosen.extend(members[: quota[label]])
    return sorted(chosen, key=lambda r: stable_rank(seed, "order:" + r["id"]))


def proportional_sample(rows: Sequence[dict], size: int, seed: int) -> list[dict]:
    """Draw size rows keeping the (bucket, label) mix of rows, order-independent."""
    if len(rows) < size:
        raise GpucostError(f"{len(rows)} inputs left for the tuning corpus, {size} requested: use a smaller "
                           "--tuning-size")
    strata: dict[str, list[dict]] = {}
    for row in rows:
        strata.setdefault(f"{row['bucket']}/{row['label']}", []).append(row)
    quota = allocate(size, {key: len(members) for key, members in strata.items()})
    chosen = []
    for key, members in sorted(strata.items()):
        members.sort(key=lambda r: stable_rank(seed, r["id"]))
        chosen.extend(members[: quota[key]])
    return sorted(chosen, key=lambda r: stable_rank(seed, "order:" + r["id"]))


def bucket_slice(rows: Sequence[dict], size: int) -> list[dict]:
    """The first rows of each bucket in file order, as many per bucket as the corpus's own bucket mix gives for
    `size` (largest remainder), kept in file order: a smaller corpus with the same buckets, the same every time."""
    if not 1 <= size <= len(rows):
        raise GpucostError(f"a slice takes 1 to {len(rows)} inputs of this corpus, {size} requested")
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["bucket"]] = counts.get(row["bucket"], 0) + 1
    quota = allocate(size, counts)
    chosen = []
    for row in rows:
        if quota[row["bucket"]] > 0:
            quota[row["bucket"]] -= 1
            chosen.append(row)
    return chosen


def split_sizes(size: int, mix: dict[str, int] | None = None) -> dict[str, int]:
    """Bucket sizes for a corpus of `size` inputs, keeping the mix's ratios (600/300/100 by default)."""
    return allocate(size, mix or DEFAULT_BUCKET_SIZES)


def build(
    source: Sequence[SourceRow],
    count_tokens: Callable[[list[str]], list[int]],
    *,
    size: int,
    tuning_size: int,
    seed: int,
    mix: dict[str, int] | None = None,
    confirmation_size: int = 0,
) -> tuple[list[dict], list[dict], dict, list[dict]]:
    """Bucket the source (the mix's buckets: a protocol's, else short / medium / long at 600/300/100), draw the
    comparison corpus, then a disjoint tuning corpus from the rest, then (confirmation_size > 0) a confirmation corpus
    with the comparison's bucket mix from what is left: disjoint from both, and drawn last so the other two stay as
    they were without it.

    Returns (comparison rows, tuning rows, bucket description for the metadata, confirmation rows).
    """
    mix = dict(mix or DEFAULT_BUCKET_SIZES)
    names, quantiles = tuple(mix), quantiles_of(mix)
    counts = count_tokens([row.text for row in source])
    bounds = bucket_bounds(counts, quantiles, names)
    rows = [
        {"id": row.id, "text": row.text, "label": row.label, "bucket": bucket_of(count, bounds)}
        for row, count in zip(source, counts)
    ]
    comparison = stratified_sample(rows, split_sizes(size, mix), seed)
    taken_ids = {row["id"] for row in comparison}
    taken_texts = {row["text"] for row in comparison}
    rest = [row for row in rows if row["id"] not in taken_ids and row["text"] not in taken_texts]
    tuning = proportional_sample(rest, tuning_size, seed + 1)
    confirmation = []
    if confirmation_size:
        tuned = {row["id"] for row in tuning} | {row["text"] for row in tuning}
        left = [row for row in rest if row["id"] not in tuned and row["text"] not in tuned]
        confirmation = stratified_sample(left, split_sizes(confirmation_size, mix), seed + 2)
    description = {
        "quantiles": list(quantiles),
        "bounds_tokens": bounds,
        "counts": {b: sum(1 for r in comparison if r["bucket"] == b) for b in names},
        "classes": {
            b: _label_counts(r for r in comparison if r["bucket"] == b) for b in names
        },
        "source_classes": {b: _label_counts(r for r in rows if r["bucket"] == b) for b in names},
    }
    return comparison, tuning, description, confirmation


def _label_counts(rows: Iterable[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["label"]] = counts.get(row["label"], 0) + 1
    return dict(sorted(counts.items()))


def describe(rows: Sequence[dict]) -> dict:
    """Size, fingerprint, order digest and class counts of a list of corpus rows."""
    return {
        "size": len(rows),
        "fingerprint": corpus_fingerprint(rows),
        "order_digest": order_digest([row["id"] for row in rows]),
        "classes": _label_counts(rows),
    }
