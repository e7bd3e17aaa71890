"""Judging a pass in one pure place: its written predictions' checks, quality, the reference, status and verdict.

The launcher judges a pass when it ends; `gpucost rejudge` judges a pending one again once its
reference exists. Both call these functions, so a verdict means the same whoever made it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpucost_mlflow.core.inputs.fingerprints import stable_rank
from gpucost_mlflow.core.judging import flips, like_for_like, verdicts
from gpucost_mlflow.core.judging.bootstrap import Scored
from gpucost_mlflow.core.judging.bounds import NOT_SHOWN, PASSED, share_bound
from gpucost_mlflow.core.judging.quality import evaluate
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.judging.verdicts import Check
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.names import COMPLETED_ENTRIES, FLIPS_GAINED, FLIPS_LOST, FLIPS_P

REFERENCE_CHECKS = ("reference_agreement", "reference_metric")
# The kind-neutral checks whose failure the quality verdict names: the labels' (scored for every output read as
# labels); each output adds its own (`QUALITY_CHECKS` of its rules, asked through the registry).
QUALITY_CHECKS = ("quality", "buckets", *REFERENCE_CHECKS, like_for_like.CHECK)


def quality_checks() -> frozenset[str]:
    """Every check whose failure the quality verdict names: the labels' and those of each output the registry knows."""
    return frozenset(QUALITY_CHECKS).union(*(registry.output(name).QUALITY_CHECKS for name in registry.output_names()))


@dataclass(frozen=True)
class Reference:
    """The accepted reference pass a variant with other numerics is judged against."""

    run_id: str
    metrics: dict
    labels: dict[str, str]


@dataclass
class Judgement:
    """A pass's verdict: status (accepted, rejected, pending, failed), its reason and the checks behind it."""

    status: str
    reason: str
    quality_verdict: str
    checks: list[Check] = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    quality: dict = field(default_factory=dict)
    comparison: dict = field(default_factory=dict)
    correct: list[str] | None = None  # the ids labelled as gold, where gold labels exist (flips count from them)
    scored: Scored | None = None  # the inputs' gold labels and buckets, so a re-judge resamples them without the corpus

    @property
    def ids_match(self) -> bool:
        return any(check.name == "ids" and check.passed for check in self.checks)


NO_GOLD = "no gold labels: ids, format and coverage only"


def settle(completed: bool, failure_reason: str, checks: Sequence[Check], pending: str) -> tuple[str, str, str]:
    """(status, reason, quality verdict): failed if the pass did not complete, rejected if a check failed,
    pending without its reference, accepted otherwise. The quality verdict is empty when nothing was judged."""
    if not completed:
        return Status.FAILED, failure_reason or "failed without a reason", ""
    failed = [check for check in checks if not check.passed and check.shown]
    unshown = [check for check in checks if not check.shown]
    if failed or unshown:  # a bar not shown is not met: the corpus is not validated (never chosen, combined, confirmed)
        status, reason = Status.REJECTED, "; ".join(f"{c.name}: {c.reason}" for c in failed + unshown)
    elif pending:
        status, reason = Status.PENDING, pending
    else:
        status, reason = Status.ACCEPTED, "every check passed"
    quality_names = quality_checks()
    failed_quality = [c.name for c in failed if c.name in quality_names]
    unshown_quality = [c.name for c in unshown if c.name in quality_names]
    quality = ((like_for_like.verdict(failed) or "failed: " + ", ".join(failed_quality)) if failed_quality else
               f"{NOT_SHOWN}: " + ", ".join(unshown_quality) if unshown_quality else
               "pending reference" if pending else "passed")
    return status, reason, quality


def pending_reason(reference_name: str) -> str:
    return f"pending reference: no accepted {reference_name} pass on this corpus and model yet"


@dataclass(frozen=True)
class Judging:
    """One pass as its output's judge reads it: whether it completed (and why not), the corpus's rows and whether
    they carry gold labels, its files as read back, the protocol (its bar: `acceptance`), the model's labels, the
    reference it is compared with (None while none exists), for a deliverable without gold labels its audit, and
    whether it asks the reference's work (core/judging/like_for_like.py: not comparable otherwise)."""

    completed: bool
    failure_reason: str
    rows: Sequence[dict]
    back: object
    protocol: object
    labels: Sequence[str] = ()
    needs_reference: bool = False
    reference: object = None
    reference_name: str = ""
    gold_labels: bool = True
    audit: Check | None = None
    unlike: Check | None = None  # the failed `comparable` check of a variant asking other work than the reference

    @property
    def acceptance(self):
        return self.protocol.acceptance


def judge(given: Judging) -> Judgement:
    """Judge a labels pass from its predictions as read back from the written file.

    A corpus without gold labels (a production deliverable) is judged by ids, format and coverage, and
    by the audit against the reference variant when the protocol declares one; quality is not measured."""
    back, reference, audit = given.back, given.reference, given.audit
    checks, counts = verdicts.basic_checks([row["id"] for row in given.rows], back)
    quality = evaluate(given.rows, back.labels, given.labels) if given.gold_labels else {}
    scored = Scored.from_rows(given.rows) if given.gold_labels else None
    if scored is not None:
        checks += verdicts.quality_checks(quality if back.ids else {}, given.acceptance, scored, back.labels)
    if audit is not None:
        checks.append(audit)
    gold = {row["id"]: row["label"] for row in given.rows} if given.gold_labels else None
    correct = flips.correct_ids(gold, back.labels) if gold is not None else None
    compare = None
    if reference is not None:
        def compare():
            found, comparison = verdicts.reference_checks(
                quality, back.labels, reference.metrics, reference.labels, given.acceptance, reference.run_id, scored)
            measured = dict(comparison.get("metrics") or {})
            if correct is None:
                return found, comparison, measured
            changed = flips.count(sorted(reference.labels), correct, flips.correct_ids(gold, reference.labels))
            return found, {**comparison, "flips": changed.record()}, {**measured, **flip_metrics(changed)}
    said = "passed" if audit is not None and audit.passed else "failed" if audit is None or audit.shown else NOT_SHOWN
    no_gold = NO_GOLD if audit is None else f"no gold labels: audit {said}"
    judged = conclude(given, checks, counts, quality if back.ids else {}, compare, no_gold)
    judged.correct, judged.scored = correct, scored
    return judged


def flip_metrics(changed: flips.Flips) -> dict[str, float]:
    """The flips as a pass's metrics (the p-value absent when no answer changed)."""
    found = {FLIPS_LOST: float(changed.lost), FLIPS_GAINED: float(changed.gained)}
    if changed.p_value is not None:
        found[FLIPS_P] = changed.p_value
    return found


def conclude(given: Judging, checks: Sequence[Check], counts: dict, quality: dict,
             compare: Callable[[], tuple[list, dict, dict]] | None = None, no_gold: str = NO_GOLD) -> Judgement:
    """The end every workload's verdict shares: the comparison with the reference (pending while none exists;
    `compare` gives its checks, comparison and measured figures), then `settle`."""
    checks, quality, comparison, pending = list(checks), dict(quality), {}, ""
    if given.needs_reference:
        if given.unlike is not None:  # other work than the reference's: its agreement would measure nothing
            checks.append(given.unlike)
        elif compare is None:
            pending = pending_reason(given.reference_name)
        else:
            found, comparison, measured = compare()
            checks += found
            quality.update(measured)
    status, reason, quality_verdict = settle(given.completed, given.failure_reason, checks, pending)
    if given.completed and not given.gold_labels:
        quality_verdict = no_gold
    return Judgement(status, reason, quality_verdict, checks, counts, quality, comparison)


def audit_sample(ids: Sequence[str], size: int, fingerprint: str) -> list[str]:
    """The inputs of a deliverable the reference variant re-labels: a fixed draw from its fingerprint, in file order."""
    chosen = set(sorted(ids, key=lambda ident: stable_rank(0, f"{fingerprint}:{ident}"))[:size])
    return [ident for ident in ids if ident in chosen]


def audit_check(labels: dict[str, str], reference_labels: dict[str, str], sample: Sequence[str], minimum: float,
                reference_name: str, confidence: float = 0.95) -> Check:
    """Agreement of the deliverable's labels with the reference variant's on the audit sample, judged by its exact
    interval as every share is (core/judging/bounds.py): passed, failed, or not shown on a sample too small for it."""
    if len(reference_labels) < len(sample):
        return Check("audit", False,
                     f"the {reference_name} audit labelled {len(reference_labels)} of {len(sample)} sampled inputs")
    hits = sum(1 for ident in sample if labels.get(ident) == reference_labels.get(ident))
    bound = share_bound(hits, len(sample), minimum, confidence)
    return Check("audit", bound.outcome == PASSED,
                 f"sampled inputs labelled as {reference_name} labels them: {bound.words()}",
                 bound.outcome != NOT_SHOWN)


def rejudged(prior: Sequence[Check], replaced: Sequence[str], found: Sequence[Check], comparison: dict,
             metrics: dict) -> Judgement:
    """A pending pass judged again now that its reference exists: its own checks kept but those the reference
    comparison replaces, the comparison's checks added, the comparison's figures in the metrics."""
    checks = [check for check in prior if check.name not in replaced] + list(found)
    status, reason, quality_verdict = settle(True, "", checks, "")
    return Judgement(status, reason, quality_verdict, checks, {}, dict(metrics), comparison)


def missing_measurements(metrics: dict, timings: Sequence[str], *, failure_reason: str = "",
                         completed_entries_reason: str = "", declared: dict[str, str] | None = None) -> dict[str, str]:
    """Measurements absent from this attempt, each with its reason (never a zero): the timings and completed count
    not in `metrics` (why: the pass's failure reason), and the ones the pass declared missing with theirs."""
    why = failure_reason or "not measured"
    missing = {key: f"not measured: {why}" for key in timings if key not in metrics}
    if COMPLETED_ENTRIES not in metrics:
        missing[COMPLETED_ENTRIES] = completed_entries_reason or why
    missing.update({key: reason for key, reason in (declared or {}).items() if key not in metrics})
    return missing
