"""Checks on a pass's written predictions: ids, format, coverage. Each gives pass/fail with a reason."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence


@dataclass
class Check:
    name: str
    passed: bool
    reason: str

    def record(self) -> dict:
        return asdict(self)


@dataclass
class ReadBack:
    """What the predictions file really holds, read from disk, not from memory."""

    ids: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    format_errors: list[str] = field(default_factory=list)


def read_predictions(path: Path, labels: Sequence[str]) -> ReadBack:
    """Parse the gzip JSONL predictions; every malformed line is noted, none is skipped silently."""
    back = ReadBack()
    if not path.exists():
        back.format_errors.append("predictions file missing")
        return back
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        back.format_errors.append(f"unreadable predictions file: {exc}")
        return back
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            ident, label, score = record["id"], record["label"], record["score"]
        except (ValueError, KeyError, TypeError):
            back.format_errors.append(f"line {number}: not an object with id, label, score")
            continue
        if label not in labels or not isinstance(score, (int, float)):
            back.format_errors.append(f"line {number}: label {label!r} or score {score!r} invalid")
            continue
        back.ids.append(ident)
        back.labels.setdefault(ident, label)
    return back


def id_counts(expected: Sequence[str], observed: Sequence[str]) -> dict:
    """expected / observed counts, duplicates, omissions and unexpected ids."""
    expected_set = set(expected)
    counts = Counter(observed)
    return {
        "expected_ids": len(expected),
        "observed_ids": len(observed),
        "duplicates": sorted(i for i, n in counts.items() if n > 1),
        "missing": sorted(expected_set - set(counts)),
        "unexpected": sorted(set(counts) - expected_set),
    }


def _examples(values: list[str]) -> str:
    shown = ", ".join(values[:3])
    return shown + (f" and {len(values) - 3} more" if len(values) > 3 else "")


def basic_checks(expected: Sequence[str], back: ReadBack) -> tuple[list[Check], dict]:
    """The checks every pass gets: format, exact ids (set equality, no duplicate), full coverage."""
    counts = id_counts(expected, back.ids)
    checks = [
        Check(
            "format",
            not back.format_errors,
            "every line has id, a known label and a numeric score"
            if not back.format_errors
            else f"{len(back.format_errors)} malformed line(s): {back.format_errors[0]}",
        )
    ]
    problems = []
    if counts["duplicates"]:
        problems.append(f"{len(counts['duplicates'])} duplicate id(s): {_examples(counts['duplicates'])}")
    if counts["missing"]:
        problems.append(f"{len(counts['missing'])} missing id(s): {_examples(counts['missing'])}")
    if counts["unexpected"]:
        problems.append(f"{len(counts['unexpected'])} unexpected id(s): {_examples(counts['unexpected'])}")
    checks.append(
        Check("ids", not problems, "; ".join(problems) or f"exactly the {counts['expected_ids']} expected ids")
    )
    covered = len(set(back.ids) & set(expected))
    checks.append(
        Check(
            "coverage",
            covered == len(expected),
            f"{covered} of {len(expected)} inputs have a prediction ({100 * covered / max(1, len(expected)):.1f} %)",
        )
    )
    return checks, counts


def corpus_accepted(checks: Sequence[Check]) -> bool:
    """A corpus is accepted only when every check passed."""
    return bool(checks) and all(check.passed for check in checks)
