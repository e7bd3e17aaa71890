"""A pass judged in the parent: the reference pass it is compared with, its files read back and judged, the audit.

The child only writes its outputs; here they are read back and judged by the rules of the protocol's output
(`workloads/<kind>/output.py`, found through the registry), against the latest accepted reference
pass when the variant's numerics differ from the reference variant's. A deliverable without gold labels is
audited by the reference variant in a child of its own. What is recorded of the judgement is assembled here
too: the attempt's metrics, the verdict artifact and the UI's preview table.
"""

from __future__ import annotations

import json
from pathlib import Path

from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.judging import judge, like_for_like, verdicts
from gpucost_mlflow.core.judging.pass_verdict import PassVerdict
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.names import COMPLETED_ENTRIES, ELAPSED_UNTIL_FAILURE_S, EVAL_S, EXPECTED_IDS, OBSERVED_IDS
from gpucost_mlflow.execution import child
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow.preparation import PassRequest, Prepared, child_spec
from gpucost_mlflow.tracking import rejudge, schema


def reference_needed(request: PassRequest, prepared: Prepared) -> bool:
    """Whether the pass is compared with a reference pass: gold labels exist and its settings differ from the
    reference variant's in what its output's rules say matters."""
    differs = registry.output(prepared.protocol.acceptance.output).needs_reference
    return bool(prepared.corpus.gold_labels) and differs(request.variant.settings, prepared.reference.settings)


def reference_pass(client: MlflowClient, experiment_id: str, prepared: Prepared, workdir: Path):
    """The latest accepted reference pass on the same corpus and model, at the same seed under a protocol declaring
    seeds (its outputs read back), or None."""
    manifest = prepared.manifest
    seed = str(manifest.seeds.torch) if prepared.protocol.seeds else ""
    run = rejudge.find_reference(client, experiment_id, prepared.reference.name, manifest.corpus.fingerprint,
                                 manifest.model.revision, seed)
    if run is None:
        return None
    return rejudge.load_reference(run, registry.output(prepared.protocol.acceptance.output), prepared.protocol,
                                  manifest.model.labels, workdir)


def judge_outcome(request: PassRequest, prepared: Prepared, outcome: PassOutcome, workdir: Path,
                  needs_reference: bool, reference) -> tuple[judge.Judgement, object, dict]:
    """The pass's files read back and judged by its output's rules; returns the judgement, what was read back and
    the audit's record (empty unless a deliverable without gold labels was audited)."""
    protocol, corpus, labels = prepared.protocol, prepared.corpus, prepared.manifest.model.labels
    rules = registry.output(protocol.acceptance.output)
    back = rules.read_back(workdir, protocol, labels)
    audit, audit_record = None, {}
    if rules.AUDITED and not corpus.gold_labels and protocol.deliverables.audit and outcome.completed:
        audit, audit_record = _audit(request, prepared, rules, back, workdir)
    unlike = like_for_like.check(request.variant.settings, prepared.reference.settings, prepared.reference.name,
                                 getattr(rules, "LIKE_FOR_LIKE", ()), protocol.acceptance.changes_work)
    judged = rules.judge_pass(judge.Judging(
        completed=outcome.completed, failure_reason=outcome.reason, rows=corpus.rows, back=back, protocol=protocol,
        labels=labels, needs_reference=needs_reference, reference=reference, reference_name=prepared.reference.name,
        gold_labels=corpus.gold_labels, audit=audit, unlike=unlike))
    return judged, back, audit_record


def _audit(request: PassRequest, prepared: Prepared, rules, back: verdicts.ReadBack,
           workdir: Path) -> tuple[verdicts.Check, dict]:
    """A deliverable without gold labels: the reference variant re-labels the protocol's audit sample in a child
    of its own (timed with the evaluation; its own stage times kept in the record, the start-up the forecast counts
    per delivered corpus); returns the audit check and what the verdict records of it."""
    declared = prepared.protocol.deliverables.audit
    corpus = prepared.corpus
    sample = judge.audit_sample(corpus.ids, declared.sample, corpus.fingerprint)
    folder = workdir / "audit"
    folder.mkdir()
    chosen = set(sample)
    sample_path = folder / "audit.jsonl"
    sample_path.write_text("".join(json.dumps({"id": row["id"], "text": row["text"]}, ensure_ascii=False) + "\n"
                                   for row in corpus.rows if row["id"] in chosen), encoding="utf-8")
    spec = child_spec(sample_path, request.model_path, folder, prepared.reference.settings, prepared.protocol)
    returncode, interrupted = child.run(spec, folder)
    if interrupted:
        raise KeyboardInterrupt
    ran = child.read_outcome(folder, returncode, interrupted)
    labels = rules.read_back(folder, prepared.protocol, prepared.manifest.model.labels).labels
    if not ran.completed:
        check = verdicts.Check("audit", False, f"the {prepared.reference.name} audit pass failed: {ran.reason}")
    else:
        check = judge.audit_check(back.labels, labels, sample, declared.min_label_agreement, prepared.reference.name,
                                  prepared.protocol.acceptance.confidence)
    return check, {"variant": prepared.reference.name, "sample_ids": sample, "reference_labels": labels,
                   "check": check.record(), "stages": ran.timings.named(schema.TIMINGS)}


def preview_table(prepared: Prepared, back, workdir: Path) -> dict | None:
    """The UI's preview table of a pass's outputs (its output's rules say what it shows), or None."""
    corpus = prepared.corpus
    return registry.output(prepared.protocol.acceptance.output).preview(corpus.rows, back, corpus.gold_labels, workdir)


def attempt_metrics(outcome: PassOutcome, judged: judge.Judgement, eval_s: float) -> dict[str, float]:
    """The attempt's metrics: stage timings, id counts, completed entries, measured bounds, memory peaks, the
    outcome's own metrics (energy, device events, FLOP rates, a workload's figures) and quality."""
    timings, measured = outcome.timings, outcome.measured
    metrics = timings.named(schema.TIMINGS)
    metrics[EVAL_S] = eval_s
    metrics.update(expected_ids=judged.counts[EXPECTED_IDS], observed_ids=judged.counts[OBSERVED_IDS])
    if measured.completed_entries is not None:
        metrics[COMPLETED_ENTRIES] = measured.completed_entries
    metrics.update(timings.named(schema.MEASURED_SPAN))
    if timings.elapsed_until_failure_s is not None:
        metrics[ELAPSED_UNTIL_FAILURE_S] = timings.elapsed_until_failure_s
    metrics.update(measured.memory_peaks)
    metrics.update(measured.metrics)
    metrics.update(judged.quality)
    return metrics


def verdict(prepared: Prepared, outcome: PassOutcome, judged: judge.Judgement, metrics: dict,
            audit_record: dict) -> PassVerdict:
    """The verdict: status, checks, ids, quality, reference, audit and what was not measured and why."""
    return PassVerdict(
        status=judged.status, reason=judged.reason, checks=tuple(judged.checks), ids=judged.counts,
        quality=judged.quality, quality_verdict=judged.quality_verdict, reference=judged.comparison,
        gold_labels=prepared.corpus.gold_labels, correct_ids=judged.correct,
        scored=judged.scored.record() if judged.scored is not None else None, audit=audit_record,
        protocol_digest=prepared.protocol.digest,
        missing_measurements=judge.missing_measurements(
            metrics, schema.TIMINGS, failure_reason=outcome.reason,
            completed_entries_reason=outcome.measured.completed_entries_reason,
            declared=outcome.measured.missing_measurements),
        memory_counter=outcome.measured.memory_counter, deterministic=outcome.deterministic,
        device_facts=outcome.board.facts,
        lanes=outcome.lanes or None)
