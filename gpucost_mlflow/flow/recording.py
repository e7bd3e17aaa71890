"""What a pass's run is given as it opens: its params, start tags, name, description, manifest, environment and
dataset (the store is needed then), handed to its handle (tracking/pass_run.PassRun), which records the attempt later.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpucost_mlflow.core.inputs.manifest import Manifest
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.execution import environment
from gpucost_mlflow.execution.outcome import PassOutcome
from gpucost_mlflow.flow.preparation import PassRequest, Prepared
from gpucost_mlflow.tracking import descriptions, pass_run, schema, writer


def record_start(request: PassRequest, prepared: Prepared, run: pass_run.PassRun, workdir: Path) -> None:
    """Params, start tags, run name, description, manifest, environment and dataset, logged as the run opens."""
    manifest = prepared.manifest.opened(run.run_id, run.experiment_id)
    params = schema.params_from_manifest(manifest)
    rules = registry.output(prepared.protocol.acceptance.output)
    start_tags = _tags(request, manifest, prepared.protocol.acceptance.main_metric or rules.MAIN_METRIC, rules.FILE)
    run_name = descriptions.pass_name(start_tags, run.run_id)
    shown = {schema.RUN_NAME: run_name, schema.NOTE: descriptions.pass_note(start_tags, {})}
    (workdir / schema.MANIFEST).write_text(json.dumps(manifest.record(), indent=2, sort_keys=True), encoding="utf-8")
    (workdir / schema.ENVIRONMENT).write_text(environment.all_distributions(), encoding="utf-8")
    dataset = pass_run.dataset_fields(prepared.corpus.rows, manifest.corpus.path, prepared.corpus.fingerprint[:16])
    run.start(params, {**start_tags, **shown}, run_name, [workdir / schema.MANIFEST, workdir / schema.ENVIRONMENT],
              dataset)


def _tags(request: PassRequest, manifest: Manifest, main_metric: str, exported: str) -> dict[str, str]:
    """The run's start tags, from the request and the manifest (the writer adds status, launcher and heartbeat)."""
    return writer.start_tags(
        role=request.role,
        variant=request.variant.name,
        basis=writer.Basis(device=manifest.device, backend=manifest.stack.backend,
                           corpus_fingerprint=manifest.corpus.fingerprint, protocol_digest=manifest.protocol_digest),
        campaign_id=request.campaign_id,
        pass_index=request.pass_index,
        extra={**request.slot_tags, schema.EXPORTED: exported},
        main_metric=main_metric,
    )


def record_observed(workdir: Path, outcome: PassOutcome) -> dict[str, str]:
    """What the child saw of the stack (the attention kernel) joined to the stack of the manifest.json the attempt
    publishes again as it ends; its params (`stack.sdpa.*`). Nothing where the child saw nothing (another engine, a
    failure before the measured part)."""
    if not outcome.stack:
        return {}
    path = workdir / schema.MANIFEST
    document = json.loads(path.read_text(encoding="utf-8"))
    document["stack"] = {**document["stack"], **outcome.stack}
    path.write_text(json.dumps(document, indent=2, sort_keys=True), encoding="utf-8")
    return schema.observed_stack_params(outcome.stack)
