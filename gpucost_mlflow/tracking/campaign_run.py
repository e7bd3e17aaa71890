"""A campaign's MLflow run, as a handle that owns every write to it: opened (or adopted from `mlflow run`), found
again to resume, shown as passes finish, finished or ended on the way out.

The campaign flow (flow/campaign.py) decides what to run and in which order; this module is where those decisions
reach the tracking store, so the flow imports no MLflow at all.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.campaign.measuring import Measuring, from_hours
from gpucost_mlflow.core.campaign.settle import FinishedVariant
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.measuring_price import Price
from gpucost_mlflow.core.names import shown
from gpucost_mlflow.tracking import experiments, limits, schema, search, store
from gpucost_mlflow.tracking.experiments import Experiment
from gpucost_mlflow.tracking.reader import attempt_row
from gpucost_mlflow.tracking.run_records import RunRecord


def pass_runs(client: MlflowClient, experiment_id: str, campaign_id: str) -> list:
    """Every pass run recorded under a campaign, oldest first."""
    return search.by_fact(client, experiment_id, schema.CAMPAIGN_ID, campaign_id, f"tags.`{schema.VARIANT}` LIKE '%'")


def measured(client: MlflowClient, experiment_id: str) -> list[FinishedVariant]:
    """Every variant and device the experiment's finished campaigns ran benchmark passes of, with the campaign: what a
    new ordinary campaign over the same configuration would pool its passes with (core/campaign/settle.py `pooled`)."""
    runs = search.all_runs(client, experiment_id, f"tags.`{schema.ROLE}` = '{schema.CAMPAIGN_ROLE}'", order_by=None)
    found: dict[tuple[str, str], FinishedVariant] = {}
    for run in runs:
        campaign_id = run.data.tags.get(schema.CAMPAIGN_ID, "")
        if run.info.status != "FINISHED" or not campaign_id:
            continue
        for done in pass_runs(client, experiment_id, campaign_id):
            facts = schema.run_facts(done)
            if facts.get(schema.ROLE, "benchmark") == "benchmark":
                key = (facts.get(schema.VARIANT, ""), facts.get(schema.DEVICE_NAME, ""))
                found.setdefault(key, FinishedVariant(*key, campaign_id))
    return list(found.values())


def experiment_of_run(client: MlflowClient, run_id: str) -> Experiment:
    """The experiment an existing run (the one `mlflow run` opened) belongs to."""
    return experiments.of(client.get_experiment(client.get_run(run_id).info.experiment_id))


@dataclass(frozen=True)
class Opening:
    """What a new campaign run records: its id and name, its variants and passes per variant, the protocol digest and
    cache policy it runs under, its rotated schedule (schedule.json) and any further tags (a fleet's ids)."""

    campaign_id: str
    name: str
    variants: list[str]
    passes: int
    protocol_digest: str
    cache_policy: str
    schedule: list[dict]
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class CampaignRun:
    """One campaign's run: its id, its campaign id and the schedule it was opened with."""

    client: MlflowClient
    experiment_id: str
    run_id: str
    campaign_id: str
    variants: list[str]
    passes: int
    progress: dict[str, float] = field(default_factory=dict)  # the latest figures shown, logged once at the finish
    before: Measuring = field(default_factory=Measuring)  # what its earlier sessions recorded (a resumed campaign)

    @classmethod
    def open(cls, client: MlflowClient, experiment_id: str, opening: Opening, adopted_run_id: str | None = None
             ) -> CampaignRun:
        """A new campaign run (or the run `mlflow run` opened): its params, tags (`opening.tags`: a fleet's ids) and
        schedule.json."""
        campaign_id, name, variants, passes = opening.campaign_id, opening.name, opening.variants, opening.passes
        run_id = adopted_run_id or client.create_run(experiment_id, run_name=name).info.run_id
        client.log_batch(
            run_id,
            params=[Param(schema.CAMPAIGN_VARIANTS, ",".join(variants)), Param(schema.CAMPAIGN_PASSES, str(passes))],
            tags=[
                RunTag(schema.CAMPAIGN_ID, campaign_id),
                RunTag(schema.ROLE, schema.CAMPAIGN_ROLE),
                RunTag(schema.PROTOCOL_DIGEST, opening.protocol_digest),
                RunTag(schema.CACHE_POLICY, opening.cache_policy),
                RunTag(schema.RUN_NAME, name),
                *(RunTag(key, value) for key, value in opening.tags.items()),
            ],
        )
        with tempfile.TemporaryDirectory() as temp:
            path = Path(temp) / "schedule.json"
            path.write_text(json.dumps(opening.schedule, indent=2), encoding="utf-8")
            client.log_artifact(run_id, str(path))
        return cls(client, experiment_id, run_id, campaign_id, list(variants), passes)

    @classmethod
    def find(cls, client: MlflowClient, experiment_id: str, campaign_id: str) -> tuple[CampaignRun, str]:
        """The campaign run of this campaign id and the protocol digest it ran under; a one-line error if none."""
        runs = client.search_runs(
            [experiment_id],
            filter_string=(f"tags.`{schema.CAMPAIGN_ID}` = '{campaign_id}' AND "
                           f"tags.`{schema.ROLE}` = '{schema.CAMPAIGN_ROLE}'"),
            max_results=1,
        )
        if not runs:
            raise GpucostError(f"no campaign '{campaign_id}' in this experiment; `gpucost attempts` lists campaign ids")
        run = runs[0]
        handle = cls(client, experiment_id, run.info.run_id, campaign_id,
                     run.data.params[schema.CAMPAIGN_VARIANTS].split(","), int(run.data.params[schema.CAMPAIGN_PASSES]),
                     before=_measured_before(run.data.metrics))
        return handle, run.data.tags.get(schema.PROTOCOL_DIGEST, "")

    def reopen(self) -> None:
        """Mark a resumed campaign's run running again."""
        self.client.update_run(self.run_id, "RUNNING")

    def attempts_by_slot(self) -> dict[str, list[dict]]:
        """Every attempt already recorded under this campaign, as attempts-table rows, per slot (oldest first)."""
        by_slot: dict[str, list[dict]] = {}
        for run in pass_runs(self.client, self.experiment_id, self.campaign_id):
            by_slot.setdefault(schema.run_facts(run).get(schema.SLOT, ""), []).append(attempt_row(RunRecord.of(run)))
        return by_slot

    def show(self, note: str, progress: dict[str, float], step: int) -> None:
        """Rewrite the description (best effort: a store gone away is the next pass's to report, with what waits in
        the spool) and keep the progress figures for `finish`, which logs them once: a metric per median, not a
        running series of steps (step: the passes finished, said in the description)."""
        self.progress = dict(progress)
        try:
            self.client.set_tag(self.run_id, schema.NOTE, note)
        except Exception as exc:
            if not store.is_store_error(exc):
                raise

    def record_end(self, overhead_s_per_pass: float | None, not_tried: dict[str, str]) -> None:
        """What the finished campaign adds: its harness overhead per pass and the variants not tried, with why."""
        if overhead_s_per_pass is not None:
            self.client.log_metric(self.run_id, schema.HARNESS_OVERHEAD,
                                   shown(schema.HARNESS_OVERHEAD, overhead_s_per_pass))
        if not_tried:
            self.client.set_tag(self.run_id, schema.NOT_TRIED,
                                "; ".join(f"{k}: {v}" for k, v in not_tried.items())[:limits.TAG_VALUE])

    def record_stop(self, run_id: str, reason: str, stopped: dict[str, str]) -> None:
        """A configuration the protocol's race stopped: why, on its latest pass (the attempts table's `stopped`
        column, which a resume reads), and every stop so far (`stopped`: variant -> line) on the campaign run."""
        self.client.set_tag(run_id, schema.RACE_STOPPED, reason[:limits.TAG_VALUE])
        self.client.set_tag(self.run_id, schema.RACE_STOPPED, "; ".join(stopped.values())[:limits.TAG_VALUE])

    def record_measuring(self, session: Measuring, price: Price | None = None) -> Measuring:
        """Its machine time, this session's added to the earlier sessions', as hours (and its cost where a catalog
        priced it, or why none did); best effort on the way out, as `end`. Returns the campaign's total."""
        total = self.before.plus(session)
        now = int(time.time() * 1000)
        metrics = [Metric(schema.MEASURING_METRICS[part], shown(schema.MEASURING_METRICS[part], hours), now, 0)
                   for part, hours in total.in_hours().items()]
        tags = []
        if price is not None:
            tags.append(RunTag(schema.MEASURING_PRICED, price.words[:limits.TAG_VALUE]))
            if price.amount is not None:
                metrics.append(Metric(schema.in_currency(schema.MEASURING_COST, price.currency), float(price.amount),
                                      now, 0))
        try:
            self.client.log_batch(self.run_id, metrics=metrics, tags=tags)
        except Exception as exc:
            if not store.is_store_error(exc):
                raise
        return total

    def finish(self) -> None:
        """Log the campaign's figures once (passes finished and accepted, the median pass_s per variant), then close
        the run."""
        now = int(time.time() * 1000)
        if self.progress:
            figures = [Metric(key, shown(key, value), now, 0) for key, value in self.progress.items()]
            self.client.log_batch(self.run_id, metrics=figures)
        self.client.set_terminated(self.run_id, "FINISHED")

    def end(self, status: str) -> None:
        """Close the run on the way out (KILLED, FAILED); a store that is gone must not hide the reason we stopped."""
        try:
            self.client.set_terminated(self.run_id, status)
        except Exception as exc:
            if not store.is_store_error(exc):
                raise


def _measured_before(metrics: dict[str, float]) -> Measuring:
    """The machine time a campaign run's earlier sessions recorded (none before the first)."""
    if schema.MEASURING_HOURS not in metrics:
        return Measuring()
    return from_hours(metrics[schema.MEASURING_HOURS], metrics.get(schema.MEASURING_PASSES_HOURS, 0.0),
                      metrics.get(schema.MEASURING_HARNESS_HOURS, 0.0))
