"""Corpus rows: strict reading, length buckets, stratified order-independent sampling, writing.

Pure Python: the token counter is passed in by the caller, so this module never loads a tokenizer.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.fingerprints import (
    canonical_row,
    corpus_fingerprint,
    order_digest,
    stable_rank,
)

BUCKETS = ("short", "medium", "long")
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
CORPUS_FIELDS = ("id", "text", "label", "bucket")


@dataclass(frozen=True)
class SourceRow:
    """One labelled input before bucketing."""

    id: str
    text: str
    label: str


@dataclass
class Corpus:
    """A validated corpus file's rows and its digests."""

    path: Path
    rows: list[dict]
    fingerprint: str
    order_digest: str
    labels: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [row["id"] for row in self.rows]

    @property
    def gold_labels(self) -> bool:
        """Whether every row carries a gold label (quality can be measured)."""
        return all(row["label"] for row in self.rows)


def _decode(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise GpucostError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise GpucostError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise GpucostError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise GpucostError(f"{path}:{line}: not valid UTF-8 (byte {exc.start})") from None


def _check_fields(path: Path, line: int, record: object, fields: Sequence[str], optional: Sequence[str] = ()) -> dict:
    if not isinstance(record, dict):
        raise GpucostError(f"{path}:{line}: expected a JSON object with fields {', '.join(fields)}")
    for name in (*fields, *optional):
        value = record.get(name)
        if value is None:
            if name in optional:
                continue
            raise GpucostError(f"{path}:{line}: missing field '{name}'")
        if not isinstance(value, str):
            raise GpucostError(f"{path}:{line}: field '{name}' must be a string")
        if not value.strip():
            raise GpucostError(f"{path}:{line}: field '{name}' is empty")
    return record


def _records(path: Path, fields: Sequence[str], optional: Sequence[str] = ()) -> Iterable[tuple[int, dict]]:
    """Yield (line number, record) from a JSONL or CSV file, every field checked present and non-empty
    (an optional field may be absent, never empty)."""
    text = _decode(path)
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [name for name in fields if name not in (reader.fieldnames or [])]
        if missing:
            raise GpucostError(f"{path}:1: CSV header lacks column(s) {', '.join(missing)}")
        for record in reader:
            yield _check_fields(path, reader.line_num, record, fields, optional), reader.line_num
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GpucostError(f"{path}:{number}: malformed JSON ({exc.msg})") from None
        yield _check_fields(path, number, record, fields, optional), number


def _unique(path: Path, pairs: Iterable[tuple[dict, int]]) -> list[dict]:
    seen: dict[str, int] = {}
    rows = []
    for record, number in pairs:
        if record["id"] in seen:
            raise GpucostError(f"{path}:{number}: duplicate id '{record['id']}' (first at line {seen[record['id']]})")
        seen[record["id"]] = number
        rows.append(record)
    if not rows:
        raise GpucostError(f"{path}: no rows")
    return rows


def read_source(path: Path, labels: Sequence[str] | None = None) -> list[SourceRow]:
    """Read a user's JSONL or CSV with id, text, label; refuse duplicates, empties, unknown labels."""
    rows = _unique(path, _records(path, ("id", "text", "label")))
    if labels is not None:
        _check_labels(path, rows, labels)
    return [SourceRow(r["id"], r["text"], r["label"]) for r in rows]


def _check_labels(path: Path, rows: Sequence[dict], labels: Sequence[str]) -> None:
    for row in rows:
        if row["label"] not in labels:
            raise GpucostError(
                f"{path}: id '{row['id']}' has unknown label '{row['label']}' (known: {', '.join(labels)})"
            )


def corpus_metadata(corpus_path: Path) -> dict:
    """The builder's metadata next to the corpus file (sources, bucket bounds), empty for a user's own file."""
    meta_path = corpus_path.parent / "corpus.json"
    if not meta_path.exists():
        return {}
    try:
        return json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError:
        raise GpucostError(f"{meta_path}: not valid JSON") from None


def bucket_names(corpus_path: Path) -> tuple[str, ...]:
    """The buckets of the corpus, shortest first, as its builder's metadata names them (short/medium/long without)."""
    return tuple(corpus_metadata(corpus_path).get("buckets", {}).get("bounds_tokens", {})) or BUCKETS


def read_corpus(path: Path, labels: Sequence[str] | None = None, *, labelled: bool = True) -> Corpus:
    """Read and validate a corpus JSONL (id, text, label, bucket) before anything is recorded.

    labelled=False accepts a production corpus without gold labels (a deliverable): id and text are
    required, label and bucket may be absent (kept as ""), never empty."""
    required = CORPUS_FIELDS if labelled else ("id", "text")
    optional = () if labelled else ("label", "bucket")
    numbered = [
        ({name: record.get(name) or "" for name in CORPUS_FIELDS}, number)
        for record, number in _records(path, required, optional)
    ]
    rows = _unique(path, numbered)
    known = bucket_names(path)
    for row, number in numbered:
        if row["bucket"] not in known and (labelled or row["bucket"]):
            raise GpucostError(f"{path}:{number}: unknown bucket '{row['bucket']}' (known: {', '.join(known)})")
    if labels is not None:
        _check_labels(path, [row for row in rows if row["label"] or labelled], labels)
    return Corpus(
        path=path,
        rows=rows,
        fingerprint=corpus_fingerprint(rows),
        order_digest=order_digest([row["id"] for row in rows]),
        labels=sorted({row["label"] for row in rows if row["label"]}),
    )


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


def jsonl_bytes(rows: Sequence[dict]) -> bytes:
    """The file form of a corpus: one canonical row per line, in processing order."""
    return "".join(canonical_row(row) + "\n" for row in rows).encode("utf-8")


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file completely or not at all (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
