"""The cache of the engines' exports and conversions: one folder per model revision, engine, engine version and
export options, built whole or not at all, so a second pass on this machine reads what the first one paid for.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from gpucost_mlflow.core.names import CONVERT_S

CACHE_ENV = "GPUCOST_ENGINE_CACHE"


def cache_root() -> Path:
    """Where exports and conversions are kept: $GPUCOST_ENGINE_CACHE, else ~/.cache/gpucost/engines."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "gpucost" / "engines")


def cache_folder(name: str, model_revision: str, version: str, options: dict) -> Path:
    """The cache folder of one export: keyed by model revision, engine, engine version and export options."""
    key = json.dumps({"model_revision": model_revision, "engine": name, "version": version, "options": options},
                     sort_keys=True)
    return cache_root() / f"{name}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


MARKER = "gpucost_engine.json"  # written last into a finished export folder: what it holds and what it took


def cached(folder: Path) -> dict | None:
    """The finished export's record (its key and the seconds its conversion took), None when there is none."""
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def keyed(implementation: ModuleType, options: dict) -> dict:
    """The options an export's cache key takes: those the implementation names in KEYED (what its conversion depends
    on, not how it is run afterwards), all of them when it names none."""
    names = getattr(implementation, "KEYED", None)
    return {key: options[key] for key in names} if names else dict(options)


def with_conversion(result: dict, convert_s: float | None) -> dict:
    """A pass's utilisation result with the seconds its export or conversion took (`convert_s`) when this pass ran
    it, or the reason it has none: the engine cache held it."""
    if convert_s is not None:
        return {**result, "metrics": {**result.get("metrics", {}), CONVERT_S: convert_s}}
    why = "export or conversion read from the engine cache (a previous pass on this machine paid it)"
    return {**result, "missing_measurements": {**result.get("missing_measurements", {}), CONVERT_S: why}}


def build_cached(record, build: Callable[[Path], None]) -> tuple[Path, float | None]:
    """The export's cache folder (the engine record's `cache`: core/kinds/workload.EngineRecord), built first when
    absent: `build(folder)` writes into a temporary folder beside it, the marker goes in last, and the whole is renamed
    into place, so a reader never sees half of it. Returns the folder and the seconds the build took (None when the
    cache held it)."""
    folder = Path(record.cache)
    if cached(folder) is not None:
        return folder, None
    started = time.perf_counter()
    folder.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        build(temp)
        seconds = time.perf_counter() - started
        (temp / MARKER).write_text(json.dumps({**record.record(), CONVERT_S: seconds}, sort_keys=True),
                                   encoding="utf-8")
        try:
            os.rename(temp, folder)
        except OSError:  # another pass built it meanwhile: keep theirs
            if cached(folder) is None:
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return folder, seconds
