"""The pass launcher: validate inputs, open the MLflow run, record the manifest, run the child, judge, record the attempt.

Nothing is recorded before every input is valid; after the run opens, every ending (accepted,
rejected, failed, interrupted) is written as one attempt and the run is closed. While the run is open
the launcher's heartbeat thread (tracking/heartbeat.py) shows it alive to readers on any host.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
from mlflow.entities import DatasetInput, InputTag, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.tracking.context.registry import resolve_tags

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.inputs.corpus import Corpus, read_corpus
from gpucost_mlflow.core.inputs.fingerprints import sha256_file
from gpucost_mlflow.core.inputs.manifest import build_manifest
from gpucost_mlflow.core.inputs.protocol import Protocol, load_protocol
from gpucost_mlflow.core.inputs.variants import (
    Variant,
    get_variant,
    load_series,
    load_variants,
)
from gpucost_mlflow.core.judging import embedding_verdicts, generation_verdicts, judge, outputs, verdicts
from gpucost_mlflow.core.judging.preview import preview
from gpucost_mlflow.execution import child, environment, faults, lanes, models, runner
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow import workloads
from gpucost_mlflow.tracking import (
    descriptions,
    embedding_reference,
    experiments,
    generation_reference,
    heartbeat,
    overlaps,
    rejudge,
    schema,
    spool,
    store,
    writer,
)

# The accepted reference pass a pass is judged against: its labels, its embeddings or its generated text.
Reference = judge.Reference | embedding_verdicts.EmbeddingReference | generation_verdicts.GenerationReference


@dataclass
class PassRequest:
    """What the user asked for, paths already resolved."""

    variant: Variant
    corpus_path: Path
    model_path: Path
    experiment: str
    protocol_path: Path
    variants_path: Path
    role: str = "benchmark"
    campaign_id: str = ""
    pass_index: str = ""
    code_root: Path = Path(".")
    parent_run_id: str = ""
    slot_tags: dict = field(default_factory=dict)
    on_child_start: Callable[[Path], None] | None = None


@dataclass
class PassResult:
    run_id: str
    status: str
    reason: str
    metrics: dict
    locked_now: bool = False
    spooled: str = ""


def corpus_metadata(corpus_path: Path) -> dict:
    """The builder's metadata next to the corpus file (sources, bucket bounds), empty for a user's own file."""
    meta_path = corpus_path.parent / "corpus.json"
    if not meta_path.exists():
        return {}
    try:
        return json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError:
        raise GpucostError(f"{meta_path}: not valid JSON") from None


@dataclass
class Prepared:
    """Everything checked before a run exists."""

    manifest: dict
    corpus: Corpus
    protocol: Protocol
    protocol_text: str
    reference: Variant
    lanes: lanes.Layout | None = None  # a variant with lanes > 1: where each lane runs


def check_corpus_spec(corpus: Corpus, protocol: Protocol) -> None:
    """A benchmark pass runs on the corpus the protocol describes: size, buckets, labels."""
    buckets = {name: sum(1 for row in corpus.rows if row["bucket"] == name) for name in protocol.buckets}
    problems = []
    if len(corpus.rows) != protocol.corpus_size:
        problems.append(f"{len(corpus.rows)} inputs, the protocol says {protocol.corpus_size}")
    if buckets != protocol.buckets:
        problems.append(f"buckets {buckets}, the protocol says {protocol.buckets}")
    extra = sorted(set(corpus.labels) - set(protocol.labels))
    if extra:
        problems.append(f"labels {', '.join(extra)} not in the protocol")
    if problems:
        raise GpucostError(f"{corpus.path}: not the protocol's corpus ({'; '.join(problems)})")


def prepare(request: PassRequest) -> Prepared:
    """Check every input and assemble the manifest; raises GpucostError before anything is recorded."""
    if request.role not in schema.ROLES:
        raise GpucostError(f"unknown role '{request.role}'; valid roles: {', '.join(schema.ROLES)}")
    faults.parse(os.environ.get(faults.ENV, ""))
    protocol = load_protocol(request.protocol_path)
    reference = get_variant(request.variants_path, protocol.acceptance.reference_variant)
    described = workloads.describe(request.variant, request.variants_path, request.model_path, protocol)
    corpus = read_corpus(request.corpus_path, labels=described.labels, labelled=request.role == "benchmark")
    if request.role == "benchmark":
        check_corpus_spec(corpus, protocol)
    meta = corpus_metadata(request.corpus_path)
    device = models.resolve_device(request.variant.device)
    import torch

    corpus_record = {
        "path": str(request.corpus_path.resolve()),
        "file_sha256": sha256_file(request.corpus_path),
        "fingerprint": corpus.fingerprint,
        "order_digest": corpus.order_digest,
        "size": len(corpus.rows),
        "labels": corpus.labels,
        "buckets": meta.get("buckets", {}).get("bounds_tokens", {}),
        "bucket_tokenizer": meta.get("buckets", {}).get("tokenizer_revision", ""),
        "sources": meta.get("sources", []),
    }
    model_record = described.model
    stack = environment.stack(device)
    stack["compilation"] = "torch.compile" if request.variant.compile else "none (eager)"
    stack["attention_backend"] = request.variant.attention
    manifest = build_manifest(
        variant=request.variant,
        corpus=corpus_record,
        model=model_record,
        stack=stack,
        code=environment.code_version(request.code_root),
        dependencies=environment.package_versions(),
        warmup={**runner.WARMUP_RULE, **protocol.warmup},
        seeds={
            "torch": runner.SEED,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        },
        run={"role": request.role, "campaign_id": request.campaign_id, "pass_index": request.pass_index},
    )
    manifest["protocol"] = {"digest": protocol.digest, "path": str(request.protocol_path)}
    manifest["workload"] = described.record
    layout = None
    if request.variant.lanes > 1:
        layout = lanes.layout(request.variant.lanes, device)
        manifest["lanes"] = lanes.manifest_record(corpus.rows, layout)
    text = request.protocol_path.read_text(encoding="utf-8")
    return Prepared(manifest, corpus, protocol, text, reference, layout)


def _start_run(client: MlflowClient, experiment_id: str, run_name: str, parent_run_id: str):
    """The pass's run: a nested run under a campaign, the run `mlflow run` created, or a new one.

    Only the client API is used, so no fluent "active run" is left to end against a store that went away.
    """
    if os.environ.get("MLFLOW_RUN_ID") and not parent_run_id:
        return client.get_run(os.environ["MLFLOW_RUN_ID"])
    tags = {schema.PARENT_RUN_ID: parent_run_id} if parent_run_id else {}
    return client.create_run(experiment_id, run_name=run_name, tags=resolve_tags(tags))


def _dataset(corpus: Corpus, manifest: dict) -> dict:
    """The comparison corpus as an MLflow dataset entity, kept as plain fields for the spool record."""
    import pandas as pd

    frame = pd.DataFrame(corpus.rows, columns=["id", "text", "label", "bucket"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = mlflow.data.from_pandas(
            frame,
            source=manifest["corpus"]["path"],
            targets="label",
            name=Path(manifest["corpus"]["path"]).stem,
            digest=corpus.fingerprint[:16],
        )
    entity = dataset._to_mlflow_entity()
    return {"name": entity.name, "digest": entity.digest, "source_type": entity.source_type,
            "source": entity.source, "schema": entity.schema, "profile": entity.profile}


def _log_dataset(client: MlflowClient, run_id: str, fields: dict) -> None:
    from mlflow.entities import Dataset

    context = InputTag(schema.DATASET_CONTEXT_TAG, schema.DATASET_CONTEXT)
    inputs = [DatasetInput(Dataset(**fields), tags=[context])]
    try:
        client.log_inputs(run_id, inputs)
    except MlflowException:
        # Passes started at once on several machines insert the same dataset row; the store keeps
        # one and refuses the others. A second try finds it and only links this run to it.
        time.sleep(0.5)
        client.log_inputs(run_id, inputs)


def execute(request: PassRequest) -> PassResult:
    """One pass = one MLflow run, ending as accepted, rejected, pending or failed.

    If the launcher itself is stopped (Ctrl-C, an error of its own) after the run opened, the run
    is still closed as a failed attempt whose reason says so, so a resume knows to run the slot again.
    """
    prepared = prepare(request)
    store.bound_http_retries()
    store.check()
    client = MlflowClient()
    experiment_id, experiment_name = experiments.resolve(client, request.experiment, create=True)
    locked_now = experiments.lock(client, experiment_id, experiment_name, prepared.protocol, prepared.protocol_text)
    if request.variant.series:
        series = load_series(request.variants_path)[request.variant.series]
        experiments.lock_series(client, experiment_id, experiment_name,
                                series.declaration(load_variants(request.variants_path)))
    with tempfile.TemporaryDirectory(prefix="gpucost-pass-") as temp:
        run = _start_run(client, experiment_id, request.variant.name, request.parent_run_id)
        beat = heartbeat.Heartbeat(client, run.info.run_id).start()
        try:
            result, interrupted = _run_pass(request, prepared, client, experiment_name, run, Path(temp), locked_now,
                                            beat)
        except BaseException as exc:
            beat.stop()
            _close_unrecorded(client, run.info.run_id, exc)
            raise
    if interrupted:
        raise KeyboardInterrupt
    return result


def _close_unrecorded(client: MlflowClient, run_id: str, exc: BaseException) -> None:
    """Record why the launcher stopped before the attempt was written; never hides the original error."""
    if isinstance(exc, KeyboardInterrupt):
        reason, state = "interrupted (launcher stopped before the attempt was recorded)", "KILLED"
    else:
        reason, state = f"error in the launcher: {one_line(exc, named=True)}", "FAILED"
    try:
        run = client.get_run(run_id)
        ended = {**run.data.tags, schema.STATUS: "failed", schema.STATUS_REASON: reason}
        metrics, note = writer.restated(ended, run.data.metrics)
        client.log_batch(run_id, metrics=metrics,
                         tags=[RunTag(schema.STATUS, "failed"), RunTag(schema.STATUS_REASON, reason), *note])
        client.set_terminated(run_id, state)
    except Exception:  # noqa: BLE001, S110 - never hide the error that stopped the launcher
        pass


def _run_pass(request: PassRequest, prepared: Prepared, client: MlflowClient, experiment_name: str, run,
              workdir: Path, locked_now: bool, beat: heartbeat.Heartbeat) -> tuple[PassResult, bool]:
    """Inside the open run: manifest and reference first (store needed), then the child, then the spool.

    After the child starts nothing needs the store: the attempt is written to the local spool, then
    published; if the store went away meanwhile, the entry waits there for `gpucost sync`. The heartbeat
    (its own thread, swallowing store errors) stops just before the attempt is published.
    """
    started = _record_start(request, prepared, client, run, workdir)
    reference = None
    differs = (generation_verdicts.needs_reference if prepared.protocol.acceptance.output == "generations"
               else verdicts.needs_reference)
    needs_reference = bool(prepared.corpus.gold_labels) and differs(request.variant.settings(),
                                                                    prepared.reference.settings())
    if needs_reference:
        reference = _reference_pass(client, run.info.experiment_id, prepared, workdir)

    outcome, interrupted = _run_child(request, prepared, workdir)
    stopped_ms = int(time.time() * 1000)
    eval_started = time.perf_counter_ns()
    judged, back, audit_record = _judge_outcome(request, prepared, outcome, workdir, needs_reference, reference)
    metrics = _attempt_metrics(outcome, judged, (time.perf_counter_ns() - eval_started) / 1e9)
    verdict = _verdict(prepared, outcome, judged, metrics, audit_record)
    metric_entities, outcome_tags = writer.outcome_batch(
        status=judged.status, reason=judged.reason, metrics=metrics, ids_match=judged.ids_match,
        quality_verdict=verdict["quality_verdict"], memory_counter=verdict["memory_counter"], checks=judged.checks,
        timestamp_ms=stopped_ms, missing=verdict["missing_measurements"],
    )
    table = _preview(prepared.corpus, back, workdir)
    if table is not None:
        (workdir / schema.PREVIEW).write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
        outcome_tags.append(RunTag(schema.LOGGED_ARTIFACTS, json.dumps([{"path": schema.PREVIEW, "type": "table"}])))
    ended = {**started.tags, **{tag.key: tag.value for tag in outcome_tags}}
    outcome_tags.append(RunTag(schema.NOTE, descriptions.pass_note(ended, {m.key: m.value for m in metric_entities})))
    (workdir / schema.VERDICT).write_text(json.dumps(verdict, indent=2), encoding="utf-8")
    if outcome.error or judged.status == "failed":
        (workdir / schema.ERROR).write_text(outcome.error or judged.reason, encoding="utf-8")
    record = {
        "target": spool.public_uri(mlflow.get_tracking_uri()),
        "experiment_id": run.info.experiment_id,
        "experiment_name": experiment_name,
        "run_id": run.info.run_id,
        "run_name": started.run_name,
        "parent_run_id": request.parent_run_id,
        "start_time": run.info.start_time,
        "end_time": int(time.time() * 1000),
        "end_status": ("KILLED" if interrupted else "FAILED") if judged.status == "failed" else "FINISHED",
        "params": started.params,
        # Without the start's heartbeat: the run keeps the last one its launcher wrote.
        "tags": {**{key: value for key, value in started.tags.items() if key != schema.HEARTBEAT},
                 schema.RUN_NAME: started.run_name, **{tag.key: tag.value for tag in outcome_tags}, **outcome.tags},
        "metrics": [[m.key, m.value, m.timestamp, m.step] for m in metric_entities],
        "dataset": started.dataset,
    }
    result = PassResult(run.info.run_id, judged.status, judged.reason, metrics, locked_now)
    beat.stop()  # the attempt is recorded now: no heartbeat may race its publication
    _publish(client, record, workdir, result)
    return result, interrupted


@dataclass
class _Started:
    """What the open run was given before the child started: its params, start tags, name and dataset."""

    params: dict[str, str]
    tags: dict[str, str]
    run_name: str
    dataset: dict


def _record_start(request: PassRequest, prepared: Prepared, client: MlflowClient, run, workdir: Path) -> _Started:
    """Params, start tags, run name, description, manifest, environment and dataset, logged as the run opens."""
    manifest = prepared.manifest
    run_id = run.info.run_id
    manifest["run"].update(run_id=run_id, experiment_id=run.info.experiment_id)
    params = schema.params_from_manifest(manifest)
    start_tags = _tags(request, manifest, prepared.protocol.acceptance.main_metric or
                       {"generations": "reference_exact_match"}.get(prepared.protocol.acceptance.output, "cosine_min"),
                       outputs.exported_file(prepared.protocol.acceptance.output))
    run_name = descriptions.pass_name(start_tags, run_id)
    shown = {schema.RUN_NAME: run_name, schema.NOTE: descriptions.pass_note(start_tags, {})}
    client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()],
                     tags=[RunTag(k, v) for k, v in {**start_tags, **shown}.items()])
    (workdir / schema.MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    (workdir / schema.ENVIRONMENT).write_text(environment.all_distributions(), encoding="utf-8")
    for name in (schema.MANIFEST, schema.ENVIRONMENT):
        client.log_artifact(run_id, str(workdir / name))
    dataset = _dataset(prepared.corpus, manifest)
    _log_dataset(client, run_id, dataset)
    return _Started(params, start_tags, run_name, dataset)


def _run_child(request: PassRequest, prepared: Prepared, workdir: Path) -> tuple[PassOutcome, bool]:
    """The pass's child (a lanes variant: one per lane, merged), started with its spec and read back: its outcome and
    whether the launcher was interrupted."""
    spec = runner.PassSpec(
        corpus_path=str(request.corpus_path.resolve()),
        model_path=str(request.model_path.resolve()),
        workdir=str(workdir),
        settings=request.variant.settings(),
        warmup=dict(prepared.protocol.warmup),
        fault=os.environ.get(faults.ENV, ""),
        workload_code=prepared.manifest["workload"].get("code", ""),
        workload_settings=prepared.manifest["workload"],
    )
    if request.on_child_start is not None:
        request.on_child_start(workdir)
    if prepared.lanes is not None:
        return lanes.run_pass(spec, prepared.corpus.rows, prepared.lanes, workdir)
    returncode, interrupted = child.run(spec, workdir)
    return child.read_outcome(workdir, returncode, interrupted), interrupted


def _preview(corpus: Corpus, back: verdicts.ReadBack | embedding_verdicts.EmbeddingReadBack
             | generation_verdicts.GenerationReadBack, workdir: Path) -> dict | None:
    """The UI's preview table of a pass's predictions (labels) or generations (with their text); None for
    embeddings, or when the pass exported nothing."""
    if isinstance(back, verdicts.ReadBack) and (workdir / schema.PREDICTIONS).exists():
        return preview(corpus.rows, back.labels, corpus.gold_labels)
    if isinstance(back, generation_verdicts.GenerationReadBack) and (workdir / generation_verdicts.GENERATIONS).exists():
        if back.labels:  # labels read from the outputs (the prompt asks for one and the corpus has gold labels)
            return preview(corpus.rows, back.labels, corpus.gold_labels, outputs=back.texts)
        return preview(corpus.rows, dict.fromkeys(back.texts, ""), gold_labels=False, outputs=back.texts)
    return None


def _judge_outcome(request: PassRequest, prepared: Prepared, outcome: PassOutcome, workdir: Path,
                   needs_reference: bool, reference: Reference | None,
                   ) -> tuple[judge.Judgement, verdicts.ReadBack | embedding_verdicts.EmbeddingReadBack
                              | generation_verdicts.GenerationReadBack, dict]:
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


def _attempt_metrics(outcome: PassOutcome, judged: judge.Judgement, eval_s: float) -> dict[str, float]:
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


def _verdict(prepared: Prepared, outcome: PassOutcome, judged: judge.Judgement, metrics: dict,
             audit_record: dict) -> dict:
    """The verdict artifact: status, checks, ids, quality, reference, audit and what was not measured and why."""
    return {
        "status": judged.status,
        "reason": judged.reason,
        "corpus_accepted": judged.status == "accepted",
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


def _publish(client: MlflowClient, record: dict, workdir: Path, result: PassResult) -> None:
    """Write the attempt to the spool, then publish it; if the store is unreachable it stays spooled (`result.spooled`)."""
    files = [workdir / name for name in (schema.MANIFEST, schema.ENVIRONMENT, schema.VERDICT, schema.PREDICTIONS,
                                         *embedding_verdicts.FILES, *generation_verdicts.FILES, schema.PREVIEW,
                                         schema.ERROR)]
    entry = spool.write(record, files)
    try:
        spool.publish_and_remove(client, entry)
    except Exception as exc:
        if not store.is_store_error(exc):
            raise
        result.spooled = str(entry.folder)
        print(f"gpucost: tracking store unreachable after the pass ({one_line(exc) or type(exc).__name__}); the "
              f"attempt is kept in {entry.folder}: run `gpucost sync` when the store is back", file=sys.stderr)
    else:
        _flag_overlaps(client, result.run_id)


def _audit(request: PassRequest, prepared: Prepared, back: verdicts.ReadBack, workdir: Path):
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


def _flag_overlaps(client: MlflowClient, run_id: str) -> None:
    """Name the passes whose measured clock overlapped this one's (best effort: the reader finds them anyway)."""
    try:
        others = overlaps.mark(client, run_id)
    except Exception as exc:
        if not store.is_store_error(exc):
            raise
        return
    if others:
        print(f"gpucost: this pass's measured clock overlapped {len(others)} other pass(es) on this host "
              f"({', '.join(others)}): its duration competed for the machine", file=sys.stderr)


def _reference_pass(client: MlflowClient, experiment_id: str, prepared: Prepared, workdir: Path) -> Reference | None:
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


def _tags(request: PassRequest, manifest: dict, main_metric: str, exported: str) -> dict[str, str]:
    stack = manifest["stack"]
    return writer.start_tags(
        role=request.role,
        variant=request.variant.name,
        device=", ".join(stack["device_names"]),
        backend=stack["backend"],
        corpus_fingerprint=manifest["corpus"]["fingerprint"],
        protocol_digest=manifest["protocol"]["digest"],
        campaign_id=request.campaign_id,
        pass_index=request.pass_index,
        extra={**request.slot_tags, schema.EXPORTED: exported},
        main_metric=main_metric,
    )
