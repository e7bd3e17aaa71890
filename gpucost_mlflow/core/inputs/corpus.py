"""Corpus files: strict reading of a source and of a corpus (its rows, buckets and digests), and writing them whole.

Drawing a corpus from a source (length buckets, stratified samples) is core/inputs/sampling.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.fingerprints import (
    canonical_row,
    corpus_fingerprint,
    order_digest,
)

BUCKETS = ("short", "medium", "long")  # a corpus's buckets when its builder's metadata names none
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
