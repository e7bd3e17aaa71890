"""Judging embeddings: the exported files read back, cosine per input against the reference, recall@k.

A pass that embeds exports `embeddings.npy` (float16, one row per input), `embedding_ids.txt` (the id
of each row, in order) and `embeddings.json` (rows, width, dtype and the fingerprints of both files).
Without gold labels, a precision change is judged by how close each input's embedding stays to the fp32
reference pass's embedding of the same input: the cosine per input, its minimum and its median against
the protocol's bars. Where the corpus has labels and the protocol declares retrieval, the k nearest
neighbours of each input should share its label: recall@k, capped, against a bar.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.inputs.acceptance import LABEL_FIELDS, Acceptance
from gpucost_mlflow.core.inputs.fingerprints import order_digest, sha256_file
from gpucost_mlflow.core.judging import judge, verdicts
from gpucost_mlflow.core.judging.bounds import NOT_SHOWN, PASSED, share_bound
from gpucost_mlflow.core.judging.verdicts import Check

EMBEDDINGS = "embeddings.npy"
IDS = "embedding_ids.txt"
META = "embeddings.json"
FILES = (EMBEDDINGS, IDS, META)
DTYPE = "float16"
REFERENCE_CHECK = "reference_cosine"
RETRIEVAL_CHECK = "retrieval"
NAME = "embeddings"
FILE = EMBEDDINGS
MAIN_METRIC = "cosine_min"
MEDIAN = "cosine_median"
RECALL = "recall_at_k"
COLUMNS = (MAIN_METRIC, MEDIAN, RECALL)
REFERENCE_CHECKS = (REFERENCE_CHECK,)
QUALITY_CHECKS = (RETRIEVAL_CHECK, REFERENCE_CHECK)
FIELDS = {"acceptance.reference.cosine_min": None, "acceptance.reference.cosine_median": None,
          "acceptance.reference.cosine_min_share": None,
          "acceptance.retrieval": {"k": None, "min_recall": None}}
AUDITED = False
LIKE_FOR_LIKE = verdicts.WORK_FIELDS  # what a variant asks of the model: the reference's, or not comparable
SECTION = ""
NO_SAMPLING = "a forward pass"
FROM_USER_CODE = True
EXAMPLE_PROTOCOL = "projects/protocol-embeddings.yaml"


@dataclass
class EmbeddingReadBack:
    """What the exported files really hold, read from disk: ids in row order, the rows as float32, any problem."""

    ids: list[str] = field(default_factory=list)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    format_errors: list[str] = field(default_factory=list)
    fingerprint: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)  # none: an embedding has no label (read as ReadBack.labels is)


@dataclass(frozen=True)
class EmbeddingAcceptance:
    """The bar for embeddings: cosine with the reference's embedding of the same input, and optional retrieval."""

    cosine_min: float  # every input's cosine with the reference at or above
    cosine_median: float  # the median over the inputs at or above
    retrieval_k: int | None = None  # recall@k of same-label neighbours (needs gold labels), when declared
    retrieval_min_recall: float | None = None
    # when declared: the share of inputs at or above cosine_min, judged by its exact interval (core/judging/bounds.py)
    # at the protocol's confidence, instead of every input of this corpus
    cosine_min_share: float | None = None


@dataclass(frozen=True)
class EmbeddingReference:
    """The accepted reference pass a variant with other numerics is compared with, its embeddings read back."""

    run_id: str
    back: EmbeddingReadBack


def fingerprint(npy: Path, ids: Sequence[str]) -> dict:
    """What identifies an export: the sha256 of the .npy file, the digest of its id order, its shape and dtype."""
    return {"sha256": sha256_file(npy), "order_digest": order_digest(list(ids)), "dtype": DTYPE}


def write_embeddings(folder: Path, ids: Sequence[str], vectors: np.ndarray) -> dict:
    """Write the three files (float16 rows, ids in row order, fingerprint); returns the fingerprint."""
    rows = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1) if len(ids) else np.zeros((0, 0), np.float32)
    np.save(folder / EMBEDDINGS, rows.astype(np.float16), allow_pickle=False)
    (folder / IDS).write_text("".join(f"{ident}\n" for ident in ids), encoding="utf-8")
    meta = {**fingerprint(folder / EMBEDDINGS, ids), "rows": int(rows.shape[0]), "width": int(rows.shape[1])}
    (folder / META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return meta


def read_embeddings(folder: Path) -> EmbeddingReadBack:
    """Read the exported files back; every problem is a format error, nothing is repaired."""
    back = EmbeddingReadBack()
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        back.format_errors.append(f"embeddings file(s) missing: {', '.join(missing)}")
        return back
    try:
        rows = np.load(folder / EMBEDDINGS, allow_pickle=False)
        ids = (folder / IDS).read_text(encoding="utf-8").splitlines()
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        back.format_errors.append(f"unreadable embeddings files: {one_line(exc)}")
        return back
    if rows.dtype != np.float16 or rows.ndim != 2:
        back.format_errors.append(f"{EMBEDDINGS} holds {rows.dtype} with {rows.ndim} dimension(s), not 2-D {DTYPE}")
        return back
    if rows.shape[0] != len(ids):
        back.format_errors.append(f"{EMBEDDINGS} has {rows.shape[0]} rows for {len(ids)} ids in {IDS}")
        return back
    back.fingerprint = fingerprint(folder / EMBEDDINGS, ids)
    if {k: meta.get(k) for k in back.fingerprint} != back.fingerprint:
        back.format_errors.append(f"{META} does not match the files (sha256 or id order changed after export)")
    vectors = rows.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1)) if len(ids) else []
    if len(bad):
        back.format_errors.append(f"{len(bad)} row(s) with a non-finite value, first: {ids[bad[0]]}")
    back.ids, back.vectors = ids, vectors
    back.fingerprint.update(rows=int(rows.shape[0]), width=int(rows.shape[1]))
    return back


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def cosines(back: EmbeddingReadBack, reference: EmbeddingReadBack) -> tuple[list[str], np.ndarray]:
    """Cosine between the pass's and the reference's embedding of each input both have (a zero vector scores 0)."""
    mine = {ident: row for row, ident in enumerate(back.ids)}
    theirs = {ident: row for row, ident in enumerate(reference.ids)}
    shared = [ident for ident in theirs if ident in mine]
    if not shared or back.vectors.shape[1:] != reference.vectors.shape[1:]:
        return [], np.zeros(0, dtype=np.float32)
    a = _unit(back.vectors[[mine[i] for i in shared]])
    b = _unit(reference.vectors[[theirs[i] for i in shared]])
    return shared, (a * b).sum(axis=1)


def recall_at_k(vectors: np.ndarray, labels: Sequence[str], k: int) -> float | None:
    """Capped recall@k of same-label neighbours: per input, the share of its k nearest others (cosine) with its label,
    out of min(k, the number of other inputs with its label); the mean over inputs that have such others."""
    n = len(labels)
    if n < 2:
        return None
    k = min(k, n - 1)
    unit = _unit(np.asarray(vectors, dtype=np.float32))
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    names = np.asarray(labels)
    same = (names[nearest] == names[:, None]).sum(axis=1)
    _, inverse, counts = np.unique(names, return_inverse=True, return_counts=True)
    others = counts[inverse] - 1
    denominator = np.minimum(k, others)
    scored = denominator > 0
    return float((same[scored] / denominator[scored]).mean()) if scored.any() else None


def format_check(back: EmbeddingReadBack) -> Check:
    """The export is three consistent files: float16 rows, one id per row, a fingerprint that matches them."""
    if back.format_errors:
        return Check("format", False, f"{len(back.format_errors)} problem(s): {back.format_errors[0]}")
    return Check("format", True, f"{back.fingerprint.get('rows', 0)} {DTYPE} rows of width "
                                 f"{back.fingerprint.get('width', 0)}, one id each, fingerprint matches")


def retrieval(back: EmbeddingReadBack, rows: Sequence[dict], acceptance) -> tuple[list[Check], dict]:
    """recall@k of same-label neighbours over the inputs the pass embedded once, against the protocol's bar."""
    bar = acceptance.bar
    gold = {row["id"]: row["label"] for row in rows if row.get("label")}
    first = {}
    for row, ident in enumerate(back.ids):
        if ident in gold:
            first.setdefault(ident, row)
    if back.format_errors or not first:
        return [Check(RETRIEVAL_CHECK, False, "no readable embeddings of labelled inputs")], {}
    recall = recall_at_k(back.vectors[list(first.values())], [gold[i] for i in first], bar.retrieval_k)
    if recall is None:
        return [Check(RETRIEVAL_CHECK, False, "no input has another input with its label")], {}
    passed = recall >= bar.retrieval_min_recall
    return [Check(RETRIEVAL_CHECK, passed, f"recall@{bar.retrieval_k} of same-label neighbours {recall:.4f} "
                                           f"{'>=' if passed else '<'} {bar.retrieval_min_recall}")], \
        {RECALL: recall}


def reference_checks(back: EmbeddingReadBack, reference: EmbeddingReference,
                     acceptance) -> tuple[list[Check], dict, dict]:
    """Cosine per input with the reference's embedding: (checks, comparison for the verdict, metrics)."""
    bar = acceptance.bar
    shared, values = cosines(back, reference.back)
    if not shared:
        why = ("embedding widths differ" if back.ids and reference.back.ids else "no input embedded by both")
        return [Check(REFERENCE_CHECK, False, f"{why}: no cosine with reference run {reference.run_id}")], \
            {"run_id": reference.run_id, "compared": 0}, {}
    low, median = float(values.min()), float(np.median(values))
    below = int((values < bar.cosine_min).sum())
    passed, shown = low >= bar.cosine_min and median >= bar.cosine_median, True
    reason = (f"cosine with reference run {reference.run_id} over {len(shared)} inputs: min {low:.6f} "
              f"(bar {bar.cosine_min}), median {median:.6f} (bar {bar.cosine_median})"
              + (f"; {below} input(s) below {bar.cosine_min}, first {shared[int(np.argmax(values < bar.cosine_min))]}"
                 if below else ""))
    if bar.cosine_min_share is not None:  # a share of the inputs, by its exact interval, not every input
        share = share_bound(len(shared) - below, len(reference.back.ids), bar.cosine_min_share, acceptance.confidence)
        passed = share.outcome == PASSED and median >= bar.cosine_median
        shown = share.outcome != NOT_SHOWN or median < bar.cosine_median
        reason += f"; inputs at cosine {bar.cosine_min} or above: {share.words()}"
    metrics = {MAIN_METRIC: low, MEDIAN: median}
    comparison = {"run_id": reference.run_id, "compared": len(shared), "below_min": below, "metrics": metrics,
                  "reference_fingerprint": reference.back.fingerprint}
    return [Check(REFERENCE_CHECK, passed, reason, shown)], comparison, metrics


def judge_embeddings(given: judge.Judging) -> judge.Judgement:
    """Judge an embeddings pass from its files as read back: ids, format, coverage, retrieval, cosine vs reference.

    Statuses and the quality verdict come from `judge.settle`, so they mean what they mean for labels."""
    back, reference, acceptance = given.back, given.reference, given.acceptance
    checks, counts = verdicts.basic_checks([row["id"] for row in given.rows], back)
    checks[0] = format_check(back)
    quality: dict = {}
    if given.gold_labels and acceptance.bar.retrieval_k is not None:
        found, quality = retrieval(back, given.rows, acceptance)
        checks += found
    compare = None if reference is None else (lambda: reference_checks(back, reference, acceptance))
    return judge.conclude(given, checks, counts, quality, compare)




def acceptance(f, metric: str) -> Acceptance:
    """An embeddings protocol's bar: cosine min and median against the reference, recall@k when declared.
    The label protocol's fields are refused here rather than silently ignored."""
    for dotted in LABEL_FIELDS:
        node = f.document["acceptance"]
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            raise GpucostError(f"{f.path}: field 'acceptance.{dotted}' judges labels; this protocol's output is {NAME}")
    if isinstance(f.document.get("deliverables"), dict) and f.document["deliverables"].get("audit") is not None:
        raise GpucostError(f"{f.path}: field 'deliverables.audit' compares labels; an {NAME} protocol has none")
    retrieval = f.document["acceptance"].get("retrieval")
    if retrieval is not None and not isinstance(retrieval, dict):
        raise GpucostError(f"{f.path}: field 'acceptance.retrieval' must be a mapping with k and min_recall")
    return Acceptance(
        coverage=f.fraction("acceptance.coverage"), main_metric="", threshold=None, per_bucket_threshold=None,
        reference_variant=f.get("acceptance.reference.variant", str), max_metric_difference=None,
        min_label_agreement=None, output=NAME,
        bar=EmbeddingAcceptance(
            cosine_min=f.fraction("acceptance.reference.cosine_min"),
            cosine_median=f.fraction("acceptance.reference.cosine_median"),
            retrieval_k=f.positive("acceptance.retrieval.k") if retrieval is not None else None,
            retrieval_min_recall=f.fraction("acceptance.retrieval.min_recall") if retrieval is not None else None,
            cosine_min_share=(f.fraction("acceptance.reference.cosine_min_share")
                              if (f.document["acceptance"].get("reference") or {}).get("cosine_min_share") is not None
                              else None),
        ),
    )


def scored(task) -> bool:
    """An embedding has no label to score (retrieval, when declared, reads the gold labels by itself)."""
    return False


needs_reference = verdicts.needs_reference


def read_back(folder: Path, protocol, labels: list[str]) -> EmbeddingReadBack:
    """The three embeddings files read back."""
    return read_embeddings(folder)


def reference(run_id: str, metrics: dict, folder: Path, protocol, labels: list[str]) -> EmbeddingReference:
    """The reference pass as the embeddings judge needs it: its run id and its embeddings read back."""
    return EmbeddingReference(run_id, read_embeddings(folder))


def judge_pass(given: judge.Judging) -> judge.Judgement:
    """An embeddings pass judged from its files (`judge_embeddings`); an embedding has no audit."""
    return judge_embeddings(given)


def judge_against_reference(prior: Sequence[Check], metrics: dict, back: EmbeddingReadBack,
                            reference: EmbeddingReference, acceptance, first: dict | None = None) -> judge.Judgement:
    """A pending embeddings pass judged again once its reference exists: its own checks kept, the cosine added."""
    found, comparison, measured = reference_checks(back, reference, acceptance)
    return judge.rejudged(prior, REFERENCE_CHECKS, found, comparison, {**metrics, **measured})


def preview(rows: list[dict], back: EmbeddingReadBack, gold_labels: bool, folder: Path) -> None:
    """No preview table: a row of numbers tells a reader nothing."""
    return


def merge(folders: list[Path], workdir: Path) -> None:
    """The lanes' embeddings as one set of files: rows and ids lane after lane (a lane that wrote none adds none)."""
    parts = [f for f in folders if (f / EMBEDDINGS).exists() and (f / IDS).exists()]
    if not parts:
        return
    ids = [i for f in parts for i in (f / IDS).read_text(encoding="utf-8").splitlines()]
    rows = [np.load(f / EMBEDDINGS, allow_pickle=False) for f in parts]
    width = max((r.shape[1] for r in rows if r.ndim == 2 and r.size), default=0)
    vectors = np.concatenate([r.reshape(-1, width) for r in rows if r.size]) if width else np.zeros((0, 0))
    write_embeddings(workdir, ids, vectors)


def figures(metrics: dict) -> str:
    """Its figures on the pass's summary line: the cosine with the reference, when compared."""
    if MAIN_METRIC not in metrics:
        return ""
    return f", cosine min {metrics[MAIN_METRIC]:.6f} median {metrics[MEDIAN]:.6f}"


def bar(a: Acceptance) -> str:
    """An embeddings protocol's bar in words: ids and coverage, retrieval when declared, cosine against the
    reference."""
    e = a.bar
    retrieval = (f"; recall@{e.retrieval_k} of same-label neighbours at least {e.retrieval_min_recall:g}"
                 if e.retrieval_k is not None else "")
    every = ("every input's" if e.cosine_min_share is None else
             f"at least {100 * e.cosine_min_share:g} % of inputs' (by its exact {100 * a.confidence:g} % interval)")
    return (f"exactly the expected ids, coverage {100 * a.coverage:g} %{retrieval}; a variant with other numerics than "
            f"{a.reference_variant} keeps {every} cosine with its embedding at least {e.cosine_min:g}, the median "
            f"at least {e.cosine_median:g}")
