"""Build the decision report from the tracking store and write report.md, report.html, attempts.csv, balance.csv."""

from __future__ import annotations

from pathlib import Path

from mlflow.entities import RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.catalog import Catalog
from gpucost_mlflow.core.corpus import write_atomic
from gpucost_mlflow.core.decision import assess, break_evens, decide
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.protocol import Protocol
from gpucost_mlflow.core.variants import Variant
from gpucost_mlflow.report import plots, render, tables
from gpucost_mlflow.tracking import exclusions, schema
from gpucost_mlflow.tracking.reader import attempts, protocol_warnings

FILES = ("report.md", "report.html", "attempts.csv", "balance.csv")


def build(experiment: str, protocol: Protocol, protocol_path: Path, catalog: Catalog,
          variants: dict[str, Variant], client: MlflowClient | None = None) -> tuple[render.Report, object]:
    """Read every attempt back and assess every configuration against the protocol and the catalog."""
    for number, cost in enumerate(protocol.other_costs, 1):
        if cost.currency != catalog.currency:
            raise GpucostError(f"{protocol.path}: other_costs[{number}] ({cost.label}) is in {cost.currency}, the catalog "
                               f"{catalog.path} in {catalog.currency}; one comparison uses one currency")
    table, experiment_tags = attempts(experiment, client)
    warnings = protocol_warnings(table, experiment_tags, protocol_path)
    configs = tables.configurations(table)
    warnings += tables.identity_notes(configs)
    assessments = assess(configs, catalog, protocol.plan, protocol.deadline, protocol.deliverables["expected"])
    if not configs:
        decision = "No decision: no benchmark pass in this experiment."
    else:
        decision = decide(assessments, protocol.deliverables["expected"], protocol.corpus_size,
                          deadline_declared=protocol.deadline is not None)
    summaries = tables.summaries(table, configs)
    report = render.Report(
        experiment=experiment,
        question=protocol.question,
        protocol_digest=experiment_tags.get(schema.PROTOCOL_DIGEST, protocol.digest),
        catalog=f"{catalog.version} ({catalog.path})",
        decision=decision,
        warnings=warnings,
        attempts=table,
        summaries=summaries,
        separations=tables.separations(configs, variants),
        assessments=assessments,
        deadline=protocol.deadline.isoformat() if protocol.deadline else "not declared",
        plan=protocol.plan,
        break_evens=[b.describe() for b in break_evens(assessments)],
        overhead=tables.harness_overhead(table),
        other_costs=protocol.other_costs,
        example_prices=catalog.example,
        exclusions=excluded_per_variant(table, client or MlflowClient(), experiment),
        exclusion_rule=protocol.exclusion_rule,
    )
    if configs:
        report.figures = {
            "Pass durations (points: every pass; bar: median)": plots.durations(summaries),
            "Peak memory per configuration and counter": plots.memory(summaries),
            "Committed cost per configuration": plots.cost(assessments),
        }
    return report, tables.balance(assessments, protocol.deadline, protocol.other_costs)


def excluded_per_variant(table, client: MlflowClient, experiment: str) -> list[render.VariantExclusions]:
    """Every variant with its attempts counted and its excluded ones (cause, by, when), so one rule is seen applied to all."""
    details = {}
    if (table["status"] == "excluded").any():
        found = client.get_experiment_by_name(experiment)
        details = {x.run_id: x for x in exclusions.listed(client, found.experiment_id)}
    result = []
    for variant, rows in table.groupby("variant", sort=False):
        excluded = []
        for run_id, device in rows.loc[rows["status"] == "excluded", ["run_id", "device"]].itertuples(index=False):
            x = details.get(run_id)
            excluded.append([device, run_id, x.cause, x.by, x.at] if x and x.cause else [device, run_id, "not recorded", "", ""])
        result.append(render.VariantExclusions(variant, len(rows), excluded))
    return result


def write(report: render.Report, balance, out_dir: Path) -> dict[str, Path]:
    """Write the four files atomically; returns their paths."""
    paths = {name: out_dir / name for name in FILES}
    write_atomic(paths["report.md"], render.markdown(report).encode("utf-8"))
    write_atomic(paths["report.html"], render.page(report).encode("utf-8"))
    write_atomic(paths["attempts.csv"], report.attempts.to_csv(index=False).encode("utf-8"))
    write_atomic(paths["balance.csv"], balance.to_csv(index=False).encode("utf-8"))
    return paths


def log(experiment: str, report: render.Report, paths: dict[str, Path], client: MlflowClient | None = None) -> str:
    """Log the files as artifacts of a run tagged gpucost.role=decision (the UI shows report.html)."""
    client = client or MlflowClient()
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    run = client.create_run(experiment_id, run_name="decision report (what-if: example price)" if report.example_prices else "decision report", tags={
        schema.ROLE: "decision", schema.PROTOCOL_DIGEST: report.protocol_digest,
    })
    client.log_batch(run.info.run_id, tags=[RunTag("gpucost.decision", report.decision[:5000])])
    for path in paths.values():
        client.log_artifact(run.info.run_id, str(path))
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id
