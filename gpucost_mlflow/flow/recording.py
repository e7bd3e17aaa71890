"""What a pass's run is given: its start record as it opens, and its attempt published through the spool.

As the run opens it gets its params, start tags, name, description, manifest, environment and dataset (the store
is needed then). After the child starts nothing needs the store: the attempt (params, every tag, metrics, dataset
and files) is written to the local spool first, then published; if the store went away meanwhile, the entry waits
there for `gpucost sync`. Once published, the passes whose measured clock overlapped this one's are flagged.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mlflow.entities import Metric, Run, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import one_line
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.execution import environment
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow.preparation import PassRequest, Prepared
from gpucost_mlflow.tracking import descriptions, overlaps, pass_run, schema, spool, store, writer


@dataclass
class Started:
    """What the open run was given before the child started: its params, start tags, name and dataset."""

    params: dict[str, str]
    tags: dict[str, str]
    run_name: str
    dataset: dict


def record_start(request: PassRequest, prepared: Prepared, client: MlflowClient, run: Run, workdir: Path) -> Started:
    """Params, start tags, run name, description, manifest, environment and dataset, logged as the run opens."""
    manifest = prepared.manifest
    run_id = run.info.run_id
    manifest["run"].update(run_id=run_id, experiment_id=run.info.experiment_id)
    params = schema.params_from_manifest(manifest)
    rules = registry.output(prepared.protocol.acceptance.output)
    start_tags = _tags(request, manifest, prepared.protocol.acceptance.main_metric or rules.MAIN_METRIC, rules.FILE)
    run_name = descriptions.pass_name(start_tags, run_id)
    shown = {schema.RUN_NAME: run_name, schema.NOTE: descriptions.pass_note(start_tags, {})}
    (workdir / schema.MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    (workdir / schema.ENVIRONMENT).write_text(environment.all_distributions(), encoding="utf-8")
    dataset = pass_run.dataset_fields(prepared.corpus.rows, manifest["corpus"]["path"],
                                      prepared.corpus.fingerprint[:16])
    pass_run.record_start(client, run_id, params, {**start_tags, **shown},
                          [workdir / schema.MANIFEST, workdir / schema.ENVIRONMENT], dataset)
    return Started(params, start_tags, run_name, dataset)


def _tags(request: PassRequest, manifest: dict, main_metric: str, exported: str) -> dict[str, str]:
    """The run's start tags, from the request and the manifest (the writer adds status, launcher and heartbeat)."""
    stack = manifest["stack"]
    return writer.start_tags(
        role=request.role,
        variant=request.variant.name,
        basis=writer.Basis(device=", ".join(stack["device_names"]), backend=stack["backend"],
                           corpus_fingerprint=manifest["corpus"]["fingerprint"],
                           protocol_digest=manifest["protocol"]["digest"]),
        campaign_id=request.campaign_id,
        pass_index=request.pass_index,
        extra={**request.slot_tags, schema.EXPORTED: exported},
        main_metric=main_metric,
    )


def attempt_record(request: PassRequest, run: Run, experiment_name: str, started: Started, end_status: str,
                   outcome: PassOutcome, outcome_tags: list[RunTag], metric_entities: list[Metric]) -> dict:
    """The attempt as the spool keeps it: the run, its end, its params and facts, start and outcome tags, metrics and
    dataset. Without a heartbeat: publishing it removes the run's last one (a finished run has no sign of life to
    show)."""
    tags, facts = schema.split_facts({
        **{key: value for key, value in started.tags.items() if key != schema.HEARTBEAT},
        schema.RUN_NAME: started.run_name, **{tag.key: tag.value for tag in outcome_tags}, **outcome.tags})
    return {
        "target": pass_run.spool_target(),
        "experiment_id": run.info.experiment_id,
        "experiment_name": experiment_name,
        "run_id": run.info.run_id,
        "run_name": started.run_name,
        "parent_run_id": request.parent_run_id,
        "start_time": run.info.start_time,
        "end_time": int(time.time() * 1000),
        "end_status": end_status,
        "params": {**started.params, **facts},
        "tags": tags,
        "metrics": [[m.key, m.value, m.timestamp, m.step] for m in metric_entities],
        "dataset": started.dataset,
    }


def publish(client: MlflowClient, record: dict, workdir: Path) -> str:
    """Write the attempt to the spool, then publish it; returns the spool folder it stays in if the store is
    unreachable, else ""."""
    files = [workdir / name for name in (schema.MANIFEST, schema.ENVIRONMENT, schema.VERDICT,
                                         *registry.exported_files(), schema.PREVIEW, schema.ERROR)]
    entry = spool.write(record, files)
    try:
        spool.publish_and_remove(client, entry)
    except Exception as exc:
        if not store.is_store_error(exc):
            raise
        print(f"gpucost: tracking store unreachable after the pass ({one_line(exc) or type(exc).__name__}); the "
              f"attempt is kept in {entry.folder}: run `gpucost sync` when the store is back", file=sys.stderr)
        return str(entry.folder)
    _flag_overlaps(client, record["run_id"])
    return ""


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

