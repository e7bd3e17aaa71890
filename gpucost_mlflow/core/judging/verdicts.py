"""Checks on a pass's written predictions: ids, format, coverage. Each gives pass/fail with a reason."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpucost_mlflow.core.judging import bootstrap
from gpucost_mlflow.core.judging.bootstrap import MetricBound, Scored, outcome_of
from gpucost_mlflow.core.judging.bounds import NOT_SHOWN, PASSED, ShareBound, share_bound
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.names import (
    EXPECTED_IDS,
    LABEL_AGREEMENT,
    LABEL_AGREEMENT_HIGH,
    LABEL_AGREEMENT_LOW,
    OBSERVED_IDS,
)
from gpucost_mlflow.core.records import Record

PREDICTIONS = "predictions.jsonl.gz"  # the labels file a pass exports: one JSON object per input


@dataclass(frozen=True)
class Check(Record):
    """One check: passed, failed, or not shown (`shown` False: its bar judged with its interval could not tell, the
    corpus too small for it; not passed either, core/judging/bounds.py)."""

    name: str
    passed: bool
    reason: str = ""
    shown: bool = True

    SPARSE = ("shown",)  # verdict.json as before for every check that was shown


def summary(checks: Sequence[Check]) -> str:
    """The checks' names in one short line, failed first: `failed: quality · not shown: reference_agreement · passed:
    ids, format, coverage` (each reason stays in verdict.json); '' without checks."""
    failed = [check.name for check in checks if not check.passed and check.shown]
    unshown = [check.name for check in checks if not check.shown]
    passed = [check.name for check in checks if check.passed]
    parts = [f"failed: {', '.join(failed)}"] if failed else []
    parts += [f"{NOT_SHOWN}: {', '.join(unshown)}"] if unshown else []
    return " · ".join(parts + ([f"passed: {', '.join(passed)}"] if passed else []))


def outcomes(text: str) -> dict[str, bool]:
    """Each check's name and whether it passed, read back from a `summary` line."""
    found = {}
    for part in text.split(" · "):
        head, _, names = part.partition(": ")
        for name in filter(None, (item.strip() for item in names.split(","))):
            found[name] = head == "passed"
    return found


def from_records(records: Sequence[dict]) -> list[Check]:
    """The checks as verdict.json keeps them (`Check.record`)."""
    return [Check.from_record(item) for item in records]


@dataclass
class ReadBack:
    """What the predictions file really holds, read from disk, not from memory."""

    ids: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    format_errors: list[str] = field(default_factory=list)


def read_lines(path: Path, what: str, format_errors: list[str]) -> list[str] | None:
    """The lines of an exported gzip JSONL file; None, with the format error noted, when it is missing or unreadable."""
    if not path.exists():
        format_errors.append(f"{what} file missing")
        return None
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return handle.read().splitlines()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        format_errors.append(f"unreadable {what} file: {exc}")
        return None


def read_predictions(path: Path, labels: Sequence[str]) -> ReadBack:
    """Parse the gzip JSONL predictions; every malformed line is noted, none is skipped silently."""
    back = ReadBack()
    lines = read_lines(path, "predictions", back.format_errors)
    if lines is None:
        return back
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            # The built-in classifier always writes a score; the user's own code may leave it out.
            ident, label, score = record["id"], record["label"], record.get("score", 0.0)
        except (ValueError, KeyError, TypeError, AttributeError):
            back.format_errors.append(f"line {number}: not an object with id, label, score")
            continue
        if label not in labels or isinstance(score, bool) or not isinstance(score, (int, float)):
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
        EXPECTED_IDS: len(expected),
        OBSERVED_IDS: len(observed),
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
            "every line has id, a known label and a numeric score (where given)"
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
        Check("ids", not problems, "; ".join(problems) or f"exactly the {counts[EXPECTED_IDS]} expected ids")
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


# pad_to_multiple_of: the same inputs, more padding tokens in each batch: other shapes, other arithmetic
# sdpa_backend: another attention kernel adds in another order (execution/attention.py)
NUMERIC_FIELDS = ("precision", "quantization", "attention", "compile", "engine", "pad_to_multiple_of",
                  "sdpa_backend")
# Fields that change the work itself: a variant truncating its inputs shorter does less of it, and may pass the
# absolute bars while answering other questions than the reference did; judged against the reference, it is not
# comparable with it unless the protocol declares the field a change of work (core/judging/like_for_like.py).
WORK_FIELDS = ("max_length", "padding")
REFERENCE_CHECK_PREFIX = "reference_"  # every kind's checks against the reference pass are named so


def needs_reference(settings: Settings, reference_settings: Settings) -> bool:
    """A variant whose numerics differ from the reference (precision, quantization, attention or its kernel, compile, or
    the engine that runs it), or whose work does (max_length), is judged against the reference's stored predictions,
    never against the absolute bars alone."""
    return bool(set(settings.differing(reference_settings)) & set(NUMERIC_FIELDS + WORK_FIELDS))


def judged_against_reference(checks_line: str) -> bool:
    """Whether a pass's checks (its `summary` line) compared it with the reference pass."""
    return any(name.startswith(REFERENCE_CHECK_PREFIX) for name in outcomes(checks_line))


def bars_check(name: str, bounds: Sequence[MetricBound]) -> Check:
    """Several bars judged by their intervals as one check: failed if any failed, not shown if any was not shown
    (never passed), passed otherwise; the reason names the bars that decided it."""
    outcome = outcome_of(bounds)
    deciding = [bound for bound in bounds if bound.outcome == outcome]
    return Check(name, outcome == PASSED, "; ".join(bound.words() for bound in deciding), outcome != NOT_SHOWN)


def quality_checks(metrics: dict, acceptance, scored: Scored, labels: dict[str, str]) -> list[Check]:
    """The main metric on the whole corpus and in every length bucket against the pre-registered bars, each by its
    bootstrap interval over the inputs (core/judging/bootstrap.py): passed, failed or not shown."""
    name = acceptance.main_metric
    if metrics.get(name) is None:
        return [Check("quality", False, f"{name} not measured"), Check("buckets", False, f"{name} not measured")]
    bounds = bootstrap.absolute_bounds(scored, labels, name, acceptance.threshold, acceptance.per_bucket_threshold,
                                       acceptance.confidence, acceptance.resampling)
    buckets = bounds[1:]
    return [bars_check("quality", bounds[:1]),
            bars_check("buckets", buckets) if buckets else Check("buckets", False, "no length bucket")]


def agreement(labels: dict[str, str], reference: dict[str, str]) -> float:
    """Share of the reference's inputs that got the same label."""
    if not reference:
        return 0.0
    return sum(1 for ident, label in reference.items() if labels.get(ident) == label) / len(reference)


def agreement_check(labels: dict[str, str], reference: dict[str, str], bar: float, confidence: float,
                    reference_run: str) -> tuple[Check, ShareBound]:
    """Label agreement with the reference judged by its exact interval (issue 51): passed when the lower bound
    reaches `min_label_agreement`, failed when the upper bound is below it, else not shown, with the inputs needed."""
    hits = sum(1 for ident, label in reference.items() if labels.get(ident) == label)
    bound = share_bound(hits, len(reference), bar, confidence)
    return Check("reference_agreement", bound.outcome == PASSED,
                 f"labels agree with reference run {reference_run}: {bound.words()}",
                 bound.outcome != NOT_SHOWN), bound


def reference_checks(metrics: dict, labels: dict[str, str], reference_metrics: dict, reference_labels: dict[str, str],
                     acceptance, reference_run: str, scored: Scored | None) -> tuple[list[Check], dict]:
    """Label agreement (by its exact interval) and the main metric's difference (whole corpus and buckets, by its
    paired bootstrap interval) against the reference pass, at the acceptance's confidence. `scored` None: a pass
    recorded before its gold labels were kept (verdict.json `scored`) is judged on the point difference, and says so."""
    name = acceptance.main_metric
    share = agreement(labels, reference_labels)
    agreed, bound = agreement_check(labels, reference_labels, acceptance.min_label_agreement, acceptance.confidence,
                                    reference_run)
    keys = [name] + sorted(k for k in reference_metrics if k.startswith("bucket_") and k.endswith("_" + name))
    differences = {key: abs(metrics.get(key, float("nan")) - reference_metrics[key]) for key in keys}
    against = f" vs reference run {reference_run}"
    if scored is None:
        worst_key = max(differences, key=lambda k: differences[k])
        worst = differences[worst_key]
        metric = Check("reference_metric", worst <= acceptance.max_metric_difference,
                       f"largest |{name} difference| {worst:.4f} ({worst_key}){against} (maximum "
                       f"{acceptance.max_metric_difference}; point estimate: this pass kept no gold labels to "
                       "resample)")
        bounds: list[MetricBound] = []
    else:
        bounds = bootstrap.difference_bounds(scored, labels, reference_labels, name, acceptance.max_metric_difference,
                                             acceptance.confidence, acceptance.resampling)
        metric = bars_check("reference_metric", bounds)
        metric = replace(metric, reason=metric.reason + against)
    comparison = {"run_id": reference_run, LABEL_AGREEMENT: share, f"{LABEL_AGREEMENT}_bound": bound.record(),
                  "metric_differences": differences,
                  "metrics": {LABEL_AGREEMENT: share, LABEL_AGREEMENT_LOW: bound.low, LABEL_AGREEMENT_HIGH: bound.high}}
    if bounds:
        comparison["metric_bounds"] = [item.record() for item in bounds]
        comparison["bootstrap"] = acceptance.resampling.record()
    return [agreed, metric], comparison


def merge_json_lines(name: str, folders: Sequence[Path], workdir: Path) -> None:
    """The lanes' line-per-input files called `name` as one file in the pass's folder, lane after lane (gzip with a
    fixed mtime, as the workloads write them); nothing is written when no lane wrote one."""
    parts = [folder / name for folder in folders if (folder / name).exists()]
    if not parts:
        return
    with open(workdir / name, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for path in parts:
            with gzip.open(path, "rb") as lane:
                out.write(lane.read())
