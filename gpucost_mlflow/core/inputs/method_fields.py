"""The protocol's fields on how the method reads its results, each parsed in one line or refused in one line: the
separation test's confidence, the quality bars' bootstrap (`acceptance.bootstrap`), the seeds, what a repetition
reproduces, the pre-registered second stage (`settle`), the race (`race`), the confirmation run (`confirmation`) and how
many deliverable corpora one child processes (`deliverables.per_child`)."""

from __future__ import annotations

import math
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.acceptance import Resampling

MIN_RESAMPLES = 200  # fewer cannot place a 95 % percentile bound; scipy's default is 9,999

# MLPerf's minimum duration of a performance run: a rate held for ten minutes, not for a few seconds.
DEFAULT_CONFIRMATION_S = 600.0
# The confirmation corpus `gpucost corpus build` writes beside the comparison corpus.
CONFIRMATION_FILE = "confirmation.jsonl"


def confidence(path: Path, value) -> float:
    """confidence: the separation test's confidence, above 0.5 and below 1 (0.95 when absent)."""
    if value is None:
        return 0.95
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.5 < value < 1:
        raise GpucostError(f"{path}: confidence must be a number above 0.5 and below 1 (0.95: a 95 % interval), "
                           f"got {value!r}")
    return float(value)


def resampling(path: Path, document: dict) -> Resampling:
    """acceptance.bootstrap: {resamples, seed}, declared before any pass is seen (2,000 and seed 0 when absent)."""
    declared = (document.get("acceptance") or {}).get("bootstrap")
    if declared is None:
        return Resampling()
    if not isinstance(declared, dict):
        raise GpucostError(f"{path}: field 'acceptance.bootstrap' must be a mapping with resamples and seed")
    found = {}
    for name, least, default in (("resamples", MIN_RESAMPLES, Resampling.resamples), ("seed", 0, Resampling.seed)):
        value = declared.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise GpucostError(f"{path}: field 'acceptance.bootstrap.{name}' must be a whole number >= {least}, "
                               f"got {value!r}")
        found[name] = value
    return Resampling(**found)


def changes_work(path: Path, document: dict, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """acceptance.reference.changes_work: the settings, among those that decide what the output asks (`allowed`: its
    rules' LIKE_FOR_LIKE), a variant may change and still be compared with the reference; none when absent."""
    declared = ((document.get("acceptance") or {}).get("reference") or {}).get("changes_work")
    if declared is None:
        return ()
    if not isinstance(declared, list) or not all(isinstance(item, str) for item in declared):
        raise GpucostError(f"{path}: field 'acceptance.reference.changes_work' must be a list of setting names")
    unknown = sorted(set(declared) - set(allowed))
    if unknown:
        raise GpucostError(f"{path}: field 'acceptance.reference.changes_work' names {', '.join(unknown)}; this "
                           f"output's work is decided by {', '.join(allowed) or 'no setting'}")
    return tuple(declared)


def settle(path: Path, document: dict, f) -> int | None:
    """settle.max_passes_per_variant: a whole number above passes_per_variant, or None when `settle` is absent."""
    if document.get("settle") is None:
        return None
    most = f.positive("settle.max_passes_per_variant")
    if most <= document.get("passes_per_variant", 0):
        raise GpucostError(f"{path}: settle.max_passes_per_variant ({most}) must be above passes_per_variant "
                           f"({document.get('passes_per_variant')}): the second stage adds passes")
    return most


def race(path: Path, document: dict) -> int | None:
    """race.from_round: the round from which a configuration more passes cannot make the choice stops being measured
    (core/campaign/race.py), a whole number from 1 to passes_per_variant; None when `race` is absent (every
    configuration runs its passes)."""
    declared = document.get("race")
    if declared is None:
        return None
    if not isinstance(declared, dict):
        raise GpucostError(f"{path}: field 'race' must be a mapping with from_round (a whole number >= 1), "
                           f"got {declared!r}")
    value = declared.get("from_round")
    passes = document.get("passes_per_variant")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GpucostError(f"{path}: field 'race.from_round' must be a whole number >= 1 (the first round after "
                           f"which a configuration may stop as dominated or late), got {value!r}")
    if isinstance(passes, int) and value > passes:
        raise GpucostError(f"{path}: field 'race.from_round' ({value}) must be at most passes_per_variant ({passes}): "
                           "a round the campaign never runs")
    return value


CHILD_IMPORTS = ("per_pass", "once")


def child_imports(path: Path, value) -> str:
    """`child_imports`: per_pass (each pass's child imports torch and the model code itself, the default) or once
    (the campaign's starter imports them once, timed, and forks each pass's child from it: execution/forkserver.py)."""
    if value is None:
        return CHILD_IMPORTS[0]
    if value not in CHILD_IMPORTS:
        raise GpucostError(f"{path}: field 'child_imports' must be one of {', '.join(CHILD_IMPORTS)}, got {value!r}")
    return value


def seeds(path: Path, value) -> tuple[int, ...]:
    """seeds: a list of distinct whole numbers >= 0; () when absent (every pass at seed 0, core/judging/seeds.py)."""
    if value is None:
        return ()
    if (not isinstance(value, list) or not value or len(set(map(str, value))) != len(value)
            or not all(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 for seed in value)):
        raise GpucostError(f"{path}: field 'seeds' must list distinct whole numbers >= 0 (e.g. [0, 1, 2]), got "
                           f"{value!r}")
    return tuple(value)


# What a repetition of the decision is to reproduce (PROTOCOL.md §7), as the protocol declares it.
REPRODUCE = ("identical-outputs", "bounded-deviation", "business-bar")


def reproduce(path: Path, value) -> str:
    """reproduce: one of REPRODUCE, bounded-deviation when absent."""
    if value is None:
        return "bounded-deviation"
    if value not in REPRODUCE:
        raise GpucostError(f"{path}: reproduce must be one of {', '.join(REPRODUCE)}, got {value!r}")
    return value


def confirmation(path: Path, value) -> tuple[str, float]:
    """confirmation: {file, min_s}: the confirmation corpus (relative to the root; '' for the comparison corpus's
    folder's confirmation.jsonl) and the seconds its run lasts at least (600 when absent)."""
    if value is None:
        return "", DEFAULT_CONFIRMATION_S
    if not isinstance(value, dict):
        raise GpucostError(f"{path}: field 'confirmation' must be a mapping with min_s (seconds) and optionally file")
    file = value.get("file", "")
    if not isinstance(file, str):
        raise GpucostError(f"{path}: field 'confirmation.file' must be a path, got {file!r}")
    seconds = value.get("min_s", DEFAULT_CONFIRMATION_S)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
        raise GpucostError(f"{path}: field 'confirmation.min_s' must be a number of seconds above 0, got {seconds!r}")
    return file.strip(), float(seconds)


def per_child(path: Path, value) -> int | None:
    """deliverables.per_child: how many corpora one child processes (`gpucost deliver`), None for all of them in one
    (the default); 1 is `gpucost pass --role deliverable`'s fresh child per corpus."""
    if value is None or value == "all":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GpucostError(f"{path}: field 'deliverables.per_child' must be a whole number >= 1 or 'all', got "
                           f"{value!r}")
    return value
