"""Labels, what the classifier delivers (and user code returning labels): the output's rules behind base.Output.

The checks and the judge themselves are the core's (`core/judging/verdicts.py`, `judge.py`), since generated text
read as labels is scored by them too; this module is what the launcher, `gpucost rejudge` and the report ask of
labels, so that none of them chooses by the output's name.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from gpucost_mlflow.core.inputs.acceptance import Acceptance
from gpucost_mlflow.core.judging import judge, verdicts
from gpucost_mlflow.core.judging.bootstrap import Scored
from gpucost_mlflow.core.judging.preview import preview as preview_rows
from gpucost_mlflow.core.names import (
    ACCURACY,
    FLIPS_GAINED,
    FLIPS_LOST,
    FLIPS_P,
    LABEL_AGREEMENT,
    LABEL_AGREEMENT_HIGH,
    LABEL_AGREEMENT_LOW,
    MACRO_F1,
)

NAME = "labels"
FILE = verdicts.PREDICTIONS
FILES = (FILE,)
MAIN_METRIC = ""  # a labels protocol always declares its main metric
REFERENCE_CHECKS = judge.REFERENCE_CHECKS
# Against the reference: agreement and its interval; flips where gold labels exist.
COLUMNS = (ACCURACY, MACRO_F1, LABEL_AGREEMENT, LABEL_AGREEMENT_LOW, LABEL_AGREEMENT_HIGH, FLIPS_LOST, FLIPS_GAINED,
           FLIPS_P)
QUALITY_CHECKS: tuple[str, ...] = ()  # the label checks are the judge's own (judge.QUALITY_CHECKS)
FIELDS: dict = {}  # the label fields other outputs refuse are checked by their own acceptance()
AUDITED = True
LIKE_FOR_LIKE = verdicts.WORK_FIELDS  # what a variant asks of the model: the reference's, or not comparable
SECTION = ""
NO_SAMPLING = "a forward pass"
FROM_USER_CODE = True
EXAMPLE_PROTOCOL = ""


def acceptance(f, metric: str) -> Acceptance:
    """A labels protocol's bar: coverage, the main metric overall and per bucket, and agreement with the reference."""
    return Acceptance(
        coverage=f.fraction("acceptance.coverage"),
        main_metric=metric,
        threshold=f.fraction("acceptance.threshold"),
        per_bucket_threshold=f.fraction("acceptance.per_bucket_threshold"),
        reference_variant=f.get("acceptance.reference.variant", str),
        max_metric_difference=f.fraction("acceptance.reference.max_metric_difference"),
        min_label_agreement=f.fraction("acceptance.reference.min_label_agreement"),
    )


def scored(task) -> bool:
    """Labels are always scored against the gold labels (where the corpus has them)."""
    return True


needs_reference = verdicts.needs_reference


def read_back(folder: Path, protocol, labels: list[str]) -> verdicts.ReadBack:
    """The predictions file read back against the model's labels."""
    return verdicts.read_predictions(folder / FILE, labels)


def reference(run_id: str, metrics: dict, folder: Path, protocol, labels: list[str]) -> judge.Reference:
    """The reference pass as the judge needs it: its metrics and its predictions read back."""
    return judge.Reference(run_id, dict(metrics), read_back(folder, protocol, labels).labels)


def judge_pass(given: judge.Judging) -> judge.Judgement:
    """A labels pass judged by the core's judge: ids, format, coverage, quality, the reference, the audit."""
    return judge.judge(given)


def judge_against_reference(prior: list, metrics: dict, back: verdicts.ReadBack, reference: judge.Reference,
                            acceptance, first: dict | None = None) -> judge.Judgement:
    """A pending labels pass judged again: agreement and the main metric's difference with the reference added, the
    difference resampled over the gold labels its first verdict kept (`first`'s `scored`)."""
    scored = Scored.from_record(first["scored"]) if first and "scored" in first else None
    found, comparison = verdicts.reference_checks(metrics, back.labels, reference.metrics, reference.labels,
                                                  acceptance, reference.run_id, scored)
    return judge.rejudged(prior, REFERENCE_CHECKS, found, comparison, metrics)


def preview(rows: list[dict], back: verdicts.ReadBack, gold_labels: bool, folder: Path) -> dict | None:
    """The predicted labels beside the gold ones, None when the pass exported nothing."""
    return preview_rows(rows, back.labels, gold_labels) if (folder / FILE).exists() else None


def write_labels(path: Path, records: Iterable[dict]) -> None:
    """The labels file, written here only (the classifier's child, user code's, the lanes' merge): one JSON line per
    record (id, label, score when given), gzip with a fixed mtime so equal passes give equal bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for record in records:
            out.write((json.dumps(record) + "\n").encode("utf-8"))


def _records(path: Path) -> Iterator[dict]:
    """The records of a labels file, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        yield from (json.loads(line) for line in handle if line.strip())


def merge(folders: list[Path], workdir: Path) -> None:
    """The lanes' predictions as one file, lane after lane, through the one writer; nothing is written when no lane
    wrote one."""
    parts = [folder / FILE for folder in folders if (folder / FILE).exists()]
    if parts:
        write_labels(workdir / FILE, (record for part in parts for record in _records(part)))


def figures(metrics: dict) -> str:
    """Its figures on the pass's summary line: macro-F1 when the pass was scored."""
    return f", macro-F1 {metrics[MACRO_F1]:.3f}" if MACRO_F1 in metrics else ""


def bar(a: Acceptance) -> str:
    """A labels protocol's bar in words: the main metric, ids and coverage, agreement with the reference."""
    return (f"{a.main_metric} at least {a.threshold:g} on the whole corpus and {a.per_bucket_threshold:g} in every "
            f"length bucket; exactly the expected ids, coverage {100 * a.coverage:g} %; a variant with other numerics "
            f"than {a.reference_variant} agrees with it on at least {100 * a.min_label_agreement:g} % of labels and "
            f"its {a.main_metric} stays within {a.max_metric_difference:g}")
