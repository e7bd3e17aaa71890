"""The report tests' experiment: attempts written through the project's own write path, one after another."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging.verdicts import Check
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.report.build import build
from gpucost_mlflow.tracking import experiments, schema, writer
from tests.helpers import CATALOG, SHIPPED_PROTOCOL, VARIANTS, evidence_of

EXPERIMENT = "scenario"
B200, RTX = "NVIDIA B200", "NVIDIA GeForce RTX 4090"


def attempt_writer(experiment: str | None = None) -> Callable[..., str]:
    """Lock the experiment (the scenario's unless named) to the shipped protocol; returns a writer of one attempt that
    gives its run id."""
    experiment = experiment or EXPERIMENT
    client = MlflowClient()
    protocol = load_protocol(SHIPPED_PROTOCOL)
    experiment_id = experiments.resolve(client, experiment, create=True).id
    experiments.lock(client, experiment_id, experiment, protocol, SHIPPED_PROTOCOL.read_text())
    clock = {"ms": 1_764_489_600_000}  # attempts follow one another, as on one rented machine

    def attempt(variant, device, pass_s, status="accepted", role="benchmark", fingerprint="a" * 64,
                quality="passed", reason="every check passed", run_name=None, note=None, wall_s=None, params=None,
                span=None, host=None, beside=None, tags_extra=None, metrics_extra=None):
        """One attempt; its run lasts wall_s (default: 1 s start + load + warm-up + pass + eval + export). `beside`: the
        run id of an attempt this one started with, side by side on another GPU of the same lot."""
        tags = writer.start_tags(role=role, variant=variant,
                                 basis=writer.Basis(device, "cuda", fingerprint, protocol.digest))
        if note:
            tags["mlflow.note.content"] = note
        if host:
            tags[schema.HOST] = host
        if wall_s is None:
            wall_s = 1.0 + 3.0 + 0.5 + (pass_s or 0.0) + 0.1 + 0.2
        start = client.get_run(beside).info.start_time if beside else clock["ms"]
        clock["ms"] = max(clock["ms"], start + round(wall_s * 1000))
        tags, facts = schema.split_facts(tags)  # as a pass records them: its facts are params
        run = client.create_run(experiment_id, tags=tags, run_name=run_name, start_time=start)
        metrics = {"load_s": 3.0, "warmup_s": 0.5, "eval_s": 0.1, "export_s": 0.2, "expected_ids": 1000}
        if span:
            metrics.update(dict(zip(schema.MEASURED_SPAN, span)))
        if pass_s is not None:
            metrics.update(pass_s=pass_s, observed_ids=1000, completed_entries=1000, **(metrics_extra or {}))
        else:
            metrics.update(observed_ids=312, completed_entries=312, mem_peak_allocated_bytes=80e9)
        writer.log_outcome(client, run.info.run_id, params={**facts, **(params or {})}, tags=tags_extra,
                           status=status, reason=reason, metrics=metrics,
                           checks=[Check("ids", True, "exactly the expected ids")] if pass_s is not None else None,
                           quality_verdict=quality if pass_s is not None else "")
        client.set_terminated(run.info.run_id, "FAILED" if status == "failed" else "FINISHED",
                              end_time=start + round(wall_s * 1000))
        return run.info.run_id

    return attempt


def lock_to(protocol_path: Path) -> str:
    """Lock the scenario's experiment to another protocol than the shipped one (its digest and text); its id."""
    client = MlflowClient()
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    for key, value in ((schema.PROTOCOL_DIGEST, load_protocol(protocol_path).digest),
                       (schema.PROTOCOL_TEXT, protocol_path.read_text())):
        client.set_experiment_tag(experiment_id, key, value)
    return experiment_id


def report(catalog: Path = CATALOG, protocol_path: Path = SHIPPED_PROTOCOL, experiment: str | None = None):
    """The decision report's model of the experiment (the scenario's unless named) and its balance table."""
    return build(evidence_of(experiment or EXPERIMENT), load_protocol(protocol_path), protocol_path, load_catalog(catalog),
                 load_variants(VARIANTS))
