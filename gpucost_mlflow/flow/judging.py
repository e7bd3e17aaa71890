"""A pass judged in the parent: the reference pass it is compared with, its files read back and judged, the audit.

The child only writes its outputs; here they are read back by the protocol's output (labels, embeddings or
generated text) and handed to the one pure judge of `core/judging/`, against the latest accepted reference
pass when the variant's numerics differ from the reference variant's. A deliverable without gold labels is
audited by the reference variant in a child of its own. What is recorded of the judgement is assembled here
too: the attempt's metrics, the verdict artifact and the UI's preview table.
"""

from __future__ import annotations

import json
from pathlib import Path

from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.corpus import Corpus
from gpucost_mlflow.core.judging import embedding_verdicts, generation_verdicts, judge, verdicts
from gpucost_mlflow.core.judging.preview import preview
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.execution import child, runner
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow.preparation import PassRequest, Prepared
from gpucost_mlflow.tracking import embedding_reference, generation_reference, rejudge, schema

# The accepted reference pass a pass is judged against: its labels, its embeddings or its generated text.
Reference = judge.Reference | embedding_verdicts.EmbeddingReference | generation_verdicts.GenerationReference
# What a pass's files read back as, by the protocol's output.
ReadBack = verdicts.ReadBack | embedding_verdicts.EmbeddingReadBack | generation_verdicts.GenerationReadBack


def reference_needed(request: PassRequest, prepared: Prepared) -> bool:
    """Whether the pass is compared with a reference pass: gold labels exist and its numerics differ from the
    reference variant's."""
    differs = (generation_verdicts.needs_reference if prepared.protocol.acceptance.output == "generations"
               else verdicts.needs_reference)
    return bool(prepared.corpus.gold_labels) and differs(request.variant.settings(), prepared.reference.settings())


def reference_pass(client: MlflowClient, experiment_id: str, prepared: Prepared, workdir: Path) -> Reference | None:
    """The latest accepted reference pass on the same corpus and model (its predictions read back), or None."""
    manifest = prepared.manifest
    run = rejudge.find_reference(client, experiment_id, prepared.reference.name, manifest["corpus"]["fingerprint"],
                                 manifest["model"]["revision"])
    if run is None:
        return None
    if prepared.protocol.acceptance.output == "embeddings":
        return embedding_reference.load_reference(run, workdir)
    if prepared.protocol.acceptance.output == "generations":
        return generation_reference.load_reference(run, workdir, prepared.protocol.generation.max_new_tokens)
    return rejudge.load_reference(client, run, manifest["model"]["labels"], workdir)


def judge_outcome(request: PassRequest, prepared: Prepared, outcome: PassOutcome, workdir: Path,
                  needs_reference: bool, reference: Reference | None) -> tuple[judge.Judgement, ReadBack, dict]:
    """The pass's files read back and judged by the protocol's output; returns the judgement, what was read back
    and the audit's record (empty unless a deliverable without gold labels was audited)."""
    protocol, corpus, manifest = prepared.protocol, prepared.corpus, prepared.manifest
    if protocol.acceptance.output == "embeddings":
        back = embedding_verdicts.read_embeddings(workdir)
        judged = embedding_verdicts.judge_embeddings(
            completed=outcome.completed, failure_reason=outcome.reason, rows=corpus.rows,
            back=back, acceptance=protocol.acceptance, needs_reference=needs_reference, reference=reference,
            reference_name=prepared.reference.name, gold_labels=corpus.gold_labels,
        )
        return judged, back, {}
    if protocol.acceptance.output == "generations":
        back = generation_verdicts.read_generations(workdir / generation_verdicts.GENERATIONS,
                                                    protocol.generation.max_new_tokens)
        judged = generation_verdicts.judge_generations(
            completed=outcome.completed, failure_reason=outcome.reason, rows=corpus.rows, back=back,
            acceptance=protocol.acceptance, generation=protocol.generation, labels=list(protocol.labels),
            needs_reference=needs_reference, reference=reference, reference_name=prepared.reference.name,
            gold_labels=corpus.gold_labels,
        )
        return judged, back, {}
    audit, audit_record = None, {}
    back = verdicts.read_predictions(workdir / schema.PREDICTIONS, manifest["model"]["labels"])
    if not corpus.gold_labels and protocol.deliverables["audit"] and outcome.completed:
        audit, audit_record = _audit(request, prepared, back, workdir)
    judged = judge.judge(
        completed=outcome.completed, failure_reason=outcome.reason, rows=corpus.rows,
        back=back, labels=manifest["model"]["labels"], acceptance=protocol.acceptance,
        needs_reference=needs_reference, reference=reference, reference_name=prepared.reference.name,
        gold_labels=corpus.gold_labels, audit=audit,
    )
    return judged, back, audit_record


def _audit(request: PassRequest, prepared: Prepared, back: verdicts.ReadBack,
           workdir: Path) -> tuple[verdicts.Check, dict]:
    """A deliverable without gold labels: the reference variant re-labels the protocol's audit sample in a child
    of its own (timed with the evaluation); returns the audit check and what the verdict records of it."""
    declared = prepared.protocol.deliverables["audit"]
    corpus = prepared.corpus
    sample = judge.audit_sample(corpus.ids, declared["sample"], corpus.fingerprint)
    folder = workdir / "audit"
    folder.mkdir()
    chosen = set(sample)
    sample_path = folder / "audit.jsonl"
    sample_path.write_text("".join(json.dumps({"id": row["id"], "text": row["text"]}, ensure_ascii=False) + "\n"
                                   for row in corpus.rows if row["id"] in chosen), encoding="utf-8")
    spec = runner.PassSpec(corpus_path=str(sample_path), model_path=str(request.model_path.resolve()), workdir=str(folder),
                           settings=prepared.reference.settings(), warmup=dict(prepared.protocol.warmup), fault="")
    returncode, interrupted = child.run(spec, folder)
    if interrupted:
        raise KeyboardInterrupt
    ran = child.read_outcome(folder, returncode, interrupted)
    labels = verdicts.read_predictions(folder / schema.PREDICTIONS, prepared.manifest["model"]["labels"]).labels
    if not ran.completed:
        check = verdicts.Check("audit", False, f"the {prepared.reference.name} audit pass failed: {ran.reason}")
    else:
        check = judge.audit_check(back.labels, labels, sample, declared["min_label_agreement"], prepared.reference.name)
    return check, {"variant": prepared.reference.name, "sample_ids": sample, "reference_labels": labels,
                   "check": check.record()}


def preview_table(corpus: Corpus, back: ReadBack, workdir: Path) -> dict | None:
    """The UI's preview table of a pass's predictions (labels) or generations (with their text); None for
    embeddings, or when the pass exported nothing."""
    if isinstance(back, verdicts.ReadBack) and (workdir / schema.PREDICTIONS).exists():
        return preview(corpus.rows, back.labels, corpus.gold_labels)
    if isinstance(back, generation_verdicts.GenerationReadBack) and (workdir / generation_verdicts.GENERATIONS).exists():
        if back.labels:  # labels read from the outputs (the prompt asks for one and the corpus has gold labels)
            return preview(corpus.rows, back.labels, corpus.gold_labels, outputs=back.texts)
        return preview(corpus.rows, dict.fromkeys(back.texts, ""), gold_labels=False, outputs=back.texts)
    return None


def attempt_metrics(outcome: PassOutcome, judged: judge.Judgement, eval_s: float) -> dict[str, float]:
    """The attempt's metrics: stage timings, id counts, completed entries, measured bounds, memory peaks, the
    outcome's own metrics (energy, device events, FLOP rates, a workload's figures) and quality."""
    metrics = outcome.timings(schema.TIMINGS)
    metrics["eval_s"] = eval_s
    metrics.update(expected_ids=judged.counts["expected_ids"], observed_ids=judged.counts["observed_ids"])
    if outcome.completed_entries is not None:
        metrics["completed_entries"] = outcome.completed_entries
    metrics.update(outcome.timings(schema.MEASURED_SPAN))
    if outcome.elapsed_until_failure_s is not None:
        metrics["elapsed_until_failure_s"] = outcome.elapsed_until_failure_s
    metrics.update(outcome.memory_peaks)
    metrics.update(outcome.metrics)
    metrics.update(judged.quality)
    return metrics


def verdict(prepared: Prepared, outcome: PassOutcome, judged: judge.Judgement, metrics: dict,
            audit_record: dict) -> dict:
    """The verdict artifact: status, checks, ids, quality, reference, audit and what was not measured and why."""
    return {
        "status": judged.status,
        "reason": judged.reason,
        "corpus_accepted": judged.status == Status.ACCEPTED,
        "checks": [check.record() for check in judged.checks],
        "ids": judged.counts,
        "quality": judged.quality,
        "quality_verdict": judged.quality_verdict,
        "reference": judged.comparison,
        "gold_labels": prepared.corpus.gold_labels,
        "audit": audit_record,
        "protocol_digest": prepared.protocol.digest,
        "missing_measurements": judge.missing_measurements(
            metrics, schema.TIMINGS, failure_reason=outcome.reason,
            completed_entries_reason=outcome.completed_entries_reason, declared=outcome.missing_measurements),
        "memory_counter": outcome.memory_counter,
        "deterministic": outcome.deterministic,
        "device_facts": outcome.device_facts,
        **({"lanes": outcome.lanes} if outcome.lanes else {}),
    }
