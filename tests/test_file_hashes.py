"""A file's content hash is taken once per process while the file is unchanged, and again as soon as it changes."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from gpucost_mlflow.core.inputs import fingerprints

pytestmark = pytest.mark.unit


def _settled(path, seconds_ago: float = 60.0) -> None:
    """Set the file's modification time in the past (its change time moves to now: no tool sets it back)."""
    then = os.stat(path).st_mtime - seconds_ago
    os.utime(path, (then, then))
    time.sleep(0.05)  # past the file system clock's granularity: the next write shows a later change time


def test_an_unchanged_file_is_hashed_once_and_a_changed_one_again(tmp_path, monkeypatch):
    monkeypatch.setattr(fingerprints, "_SETTLED_NS", 0)  # files of this test count as settled at once
    path = tmp_path / "weights.bin"
    path.write_bytes(b"a" * 100)
    _settled(path)
    first = fingerprints.sha256_file(path)
    assert first == hashlib.sha256(b"a" * 100).hexdigest()
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    assert fingerprints.sha256_file(path) == first and not opened  # the same file: not read again
    path.write_bytes(b"b" * 100)  # same size, then its modification time set back as before
    _settled(path)
    assert fingerprints.sha256_file(path) == hashlib.sha256(b"b" * 100).hexdigest()  # its change time moved


def test_a_file_written_moments_ago_is_hashed_every_time(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"x" * 10)
    assert fingerprints.sha256_file(path) == hashlib.sha256(b"x" * 10).hexdigest()
    path.write_bytes(b"y" * 10)  # within the clock's granularity the times may not move: read again regardless
    assert fingerprints.sha256_file(path) == hashlib.sha256(b"y" * 10).hexdigest()
