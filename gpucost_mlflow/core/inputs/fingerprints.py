"""Content hashes: files, directories, corpus rows and processing order."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

_CHUNK = 1 << 20
_SETTLED_NS = 2_000_000_000  # a file unchanged this long is hashed once per process


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes. Hashed once per process while the file is unchanged (its device, inode, size,
    modification and change times: any write changes the change time, which no tool sets back), so a campaign's
    passes do not each hash the same model and corpus again. A file changed in the last seconds is hashed every
    time: two writes within the clock's granularity could leave the same times (git's racy-clean case)."""
    found = os.stat(path)
    state = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    if time.time_ns() - max(found.st_mtime_ns, found.st_ctime_ns) < _SETTLED_NS:
        return _hashed.__wrapped__(str(path), state)
    return _hashed(os.path.realpath(path), state)


@functools.lru_cache(maxsize=256)
def _hashed(path: str, state: tuple) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_files(root: Path, relpaths: Iterable[str]) -> str:
    """Hash of a set of files under root: their relative paths and contents, sorted by path."""
    digest = hashlib.sha256()
    for rel in sorted(relpaths):
        digest.update(f"{rel}\0{sha256_file(root / rel)}\n".encode())
    return digest.hexdigest()


def directory_files(root: Path) -> list[str]:
    """Relative paths of every regular file under root, hidden files excluded."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def canonical_row(row: dict) -> str:
    """The canonical text of one corpus row: fixed field order, no whitespace, UTF-8 kept."""
    return json.dumps(
        {"id": row["id"], "text": row["text"], "label": row["label"], "bucket": row["bucket"]},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def corpus_fingerprint(rows: Sequence[dict]) -> str:
    """sha256 over the canonical rows sorted by id: the same set of inputs gives the same print
    whatever their order."""
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r["id"]):
        digest.update(canonical_row(row).encode("utf-8") + b"\n")
    return digest.hexdigest()


def order_digest(ids: Sequence[str]) -> str:
    """sha256 of the ids in processing order: two passes in the same order share it."""
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()


def stable_rank(seed: int, key: str) -> str:
    """A deterministic pseudo-random sort key that does not depend on row order."""
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()
