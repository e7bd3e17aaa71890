"""Build the decision report from the tracking store and write report.md, report.html, attempts.csv, balance.csv."""

from __future__ import annotations

import datetime as dt
import shlex
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.campaign.settle import STAGE, Progress, StagePlan, looks, unreported
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet.plan import priced_devices_hint
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.inputs.variants import Variant
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.stats import per_look
from gpucost_mlflow.core.money.catalog import Catalog, dated
from gpucost_mlflow.core.money.choice import (
    NOTHING_PRICED,
    Choice,
    await_stage,
    break_evens,
    choose,
    decide,
    doubt,
    hold,
)
from gpucost_mlflow.core.money.decision import NO_DEADLINE, Assessment, Configuration, Rules, assess
from gpucost_mlflow.core.money.startups import audit_rule
from gpucost_mlflow.report import (
    alternatives,
    confirmations,
    decision_text,
    model,
    plots,
    render,
    seeded,
    short,
    standing,
    tables,
)
from gpucost_mlflow.report.bill import bill_lines
from gpucost_mlflow.tracking import (
    campaign_run,
    decision_run,
    exclusions,
    experiments,
    limits,
    schema,
    store,
    ui,
)
from gpucost_mlflow.tracking.reader import attempts, protocol_warnings

FILES = ("report.md", "report.html", "attempts.csv", "balance.csv")
PRICES_TITLE = "Prices and their age"
PRICES_TEXT = ("Every catalog row as the report read it, with the date its price was observed (`as_of`) and its age "
               "today; a row older than the protocol's max_price_age_days is a stale price and is not priced unless "
               "the report is run with --allow-stale-prices.")
NOT_MEASURED_TITLE = "Offers not measured"
NOT_MEASURED_TEXT = ("Catalog rows for GPUs no pass here ran on: a device that was not measured is never priced. A "
                     "campaign on one of them would add it to the decision. Per GPU: its rows and the cheapest lot.")
CONFIRMATION_TITLE = "Confirmation"
CONFIRMATION_TEXT = ("Each chosen configuration run on the disjoint confirmation corpus for at least the protocol's "
                     "confirmation.min_s, judged by the same bars (`gpucost confirm`): confirmed when quality held and "
                     "its rate stayed at or above its slowest benchmark pass's, the rate the committed plan is sized at, "
                     "on every one of its confirmation runs: one that did not hold is not retried away. A run excluded "
                     "for a documented cause (`gpucost exclude`), one interrupted before a result and the reference's "
                     "outputs are listed, not counted. A choice not confirmed is not committed (docs/costs.md, "
                     "\"Confirmation\").")
CHANGED_PROTOCOL = "protocol changed after results"  # reader.protocol_warnings' warning, which a what-if supersedes


@dataclass(frozen=True)
class Options:
    """How one report is asked for: the passes re-judged first, a what-if's changes, its date, stale prices."""

    rejudged: tuple[str, ...] = ()  # the pending passes judged just before (their lines), said near the top
    what_if: str = ""  # what this protocol changes against the locked one (`changed deadline`), allowed as a what-if
    today: dt.date | None = None  # the date prices are aged against (the UTC date when not given)
    now: dt.datetime | None = None  # when the report is read: a start at the report is placed there (UTC now if not given)
    allow_stale: bool = False  # price rows older than the protocol's max_price_age_days anyway
    variants_path: Path | None = None  # the variants file the report's exact commands name


def build(experiment: str, protocol: Protocol, protocol_path: Path, catalog: Catalog,
          variants: dict[str, Variant], client: MlflowClient | None = None, options: Options = Options()
          ) -> tuple[model.Report, pd.DataFrame]:
    """Read every attempt back and assess every configuration against the protocol and the catalog.

    A what-if's changes are said in the title, the digest line and the decision note's first words (which replace
    the changed-protocol warning)."""
    _one_currency(protocol, catalog)
    now = options.now or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    at_report = protocol.starts_at_report
    protocol = protocol.at(now)  # plan.start: at_report starts the window now, its deadline so many hours after
    today = options.today or now.date()
    catalog, prices = dated(catalog, today, protocol.max_price_age_days, options.allow_stale)
    client = client or store.client()
    table, experiment_tags = attempts(experiment, client)
    warnings = [w for w in protocol_warnings(table, experiment_tags, protocol_path)
                if not (options.what_if and w.startswith(CHANGED_PROTOCOL))]
    configs, seed_notes = seeded.configurations(table, protocol)
    warnings += tables.identity_notes(configs) + seed_notes
    warnings += stage_notes(table, configs, protocol.settle_max_passes)
    assessments, choice, decision, confirmed, stage = _decided(configs, protocol, catalog, today, table)
    priced_hint = ""
    if choice.none == NOTHING_PRICED:  # what to do next: the devices the catalog does price, and how to weigh them
        priced_hint = priced_devices_hint(catalog, experiment, [p for p in catalog.path.split(", ") if p],
                                          protocol_path=protocol_path, variants_path=options.variants_path)
        decision = f"{decision} {priced_hint}" if priced_hint else decision
    if options.what_if:
        decision = f"What-if protocol ({options.what_if}): {decision}"
    summaries = tables.summaries(table, configs)
    report = model.Report(
        experiment=experiment,
        question=protocol.question,
        protocol_digest=experiment_tags.get(schema.PROTOCOL_DIGEST, protocol.digest),
        catalog=f"{catalog.version} ({catalog.path})",
        decision=decision,
        warnings=warnings,
        attempts=table,
        summaries=summaries,
        separations=tables.separations(configs, variants, protocol.passes_per_variant, *_looked(protocol, table)),
        assessments=assessments,
        deadline=protocol.deadline.isoformat() if protocol.deadline else NO_DEADLINE,
        choice=choice,
        plan=protocol.plan,
        break_evens=[b.describe() for b in break_evens(assessments)],
        overhead=overhead(table, client, experiments.named(client, experiment).experiment_id),
        other_costs=protocol.other_costs,
        example_prices=catalog.example,
        exclusions=excluded_per_variant(table, client, experiment),
        exclusion_rule=protocol.exclusion_rule,
        passes_per_variant=protocol.passes_per_variant,
        settle=settle_command(experiment, protocol, protocol_path, catalog, options.variants_path, choice.undecided),
        stage=stage,
        priced_hint=priced_hint,
        reproduce=protocol.reproduce,
        confirmations=confirmed,
        seeds=protocol.seeds,
        written=today,
        read_at=now,
        start_at_report=at_report,
        confirm=command("confirm", experiment, protocol_path, options.variants_path, catalog),
        experiment_id=experiments.named(client, experiment).experiment_id,
        ui_root=ui.root(client.tracking_uri),
        rejudged=list(options.rejudged),
        what_if=f"what-if protocol {protocol_path.name} ({options.what_if})" if options.what_if else "",
        what_if_digest=protocol.digest if options.what_if else "",
        lists=[(PRICES_TITLE, PRICES_TEXT, prices),
               (alternatives.TITLE, alternatives.TEXT,
                alternatives.endpoint_lines(protocol, today, options.allow_stale)),
               (NOT_MEASURED_TITLE, NOT_MEASURED_TEXT, _not_measured(catalog, {c.device for c in configs})),
               (CONFIRMATION_TITLE, CONFIRMATION_TEXT, confirmations.lines(confirmed))],
        bill=bill_lines(decision_run.latest_bill(client, experiments.named(client, experiment).experiment_id)),
    )
    if configs:
        report.figures = plots.Drawn(lambda: plots.for_report(summaries, assessments, choice))
    return report, tables.balance([standing.shown(a, choice) for a in assessments], protocol.deadline,
                                  protocol.other_costs)


def overhead(table: pd.DataFrame, client: MlflowClient, experiment_id: str) -> tuple[float | None, int, int]:
    """The harness overhead per pass by the campaign's one definition (flow/campaign.py: its wall time outside the
    timed parts, per pass), read from each campaign run's own metric and weighted by its attempts in this table:
    (seconds, attempts, campaigns); (None, 0, 0) when no campaign recorded one."""
    ids = [cid for cid in dict.fromkeys(table["campaign_id"].fillna("")) if cid] if len(table) else []
    found = campaign_run.overheads(client, decision_run.campaign_runs(client, experiment_id, ids))
    counts = {cid: int((table["campaign_id"] == cid).sum()) for cid in found}
    passes = sum(counts.values())
    if not passes:
        return None, 0, 0
    return sum(found[cid] * counts[cid] for cid in found) / passes, passes, len(found)


def stage_notes(table: pd.DataFrame, configs: list[Configuration], ceiling: int | None) -> list[str]:
    """What a pre-registered second stage (`gpucost campaign --settle`) added: the configurations it ran again and the
    passes each now has, read once with all of them."""
    if "stage" not in table or not (table["stage"] == STAGE).any():
        return []
    again = set(table[table["stage"] == STAGE]["variant"])
    counts = ", ".join(f"{c.name} {len(c.durations.values)}" for c in configs if c.variant in again)
    return [(f"a second stage pre-registered in the protocol (settle.max_passes_per_variant: {ceiling}) ran further "
            f"passes of the undecided configurations, the same number each; passes per configuration now: {counts}; "
            "the decision below reads them all once")]


def settle_command(experiment: str, protocol: Protocol, protocol_path: Path, catalog: Catalog,
                   variants_path: Path | None, undecided: list | None = None) -> str:
    """The exact command of the protocol's second stage for this decision, with its ceiling; or why there is none
    (not declared, or already run to its ceiling); '' when nothing is undecided."""
    if not undecided:
        return ""
    if protocol.settle_max_passes is None:
        return ("the protocol declares no second stage (settle: {max_passes_per_variant: N}): more passes under it "
                "would be peeking; a new protocol declaring one, in a new experiment, would")
    done = max((len(a.configuration.durations.values) for a in undecided or []), default=0)
    if done >= protocol.settle_max_passes:
        return (f"the protocol's second stage has run them to its {protocol.settle_max_passes} passes per "
                "configuration: more under this protocol would be peeking; a new protocol, in a new experiment, would")
    settles = command("campaign --settle", experiment, protocol_path, variants_path, catalog)
    devices = list(dict.fromkeys(a.configuration.device for a in undecided))
    if len(devices) > 1:
        fleet = command("fleet launch --settle", experiment, protocol_path, variants_path, catalog)
        return (f"`{fleet} --max-hours H --max-cost USD` runs each device's own configurations on its GPU type "
                f"({', '.join(devices)}), or `{settles}` on a machine with each; up to the protocol's "
                f"{protocol.settle_max_passes} passes per configuration, the decision read once every device has "
                "reported")
    return (f"`{settles}` runs them, up to the protocol's {protocol.settle_max_passes} passes per "
            "configuration, and reads the decision once")


def command(verb: str, experiment: str, protocol_path: Path, variants_path: Path | None, catalog: Catalog) -> str:
    """The exact gpucost command (`campaign --settle`, `confirm`) that acts on this decision: its experiment,
    protocol, variants file and catalogs."""
    parts = [f"gpucost {verb} --experiment", shlex.quote(experiment), "--protocol", shlex.quote(str(protocol_path))]
    if variants_path is not None:
        parts += ["--variants-file", shlex.quote(str(variants_path))]
    parts += [f"--catalog {shlex.quote(path)}" for path in catalog.path.split(", ") if path]
    return " ".join(parts)


def _not_measured(catalog: Catalog, devices: set[str]) -> list[str]:
    """'l4 (NVIDIA L4): 3 rows, the cheapest 0.71 USD per lot: l4 hourly (min 60 s, per 1 s) on gcp ...'."""
    lines = []
    for gpu, rows in catalog.not_measured(devices).items():
        names = "; ".join(rows[0].device_names) or "device names unknown"
        lines.append(f"{gpu} ({names}): {len(rows)} row{'s' if len(rows) > 1 else ''}, the cheapest "
                     f"{rows[0].kind.price(rows[0])}: {rows[0].describe()}")
    return lines


def _one_currency(protocol: Protocol, catalog: Catalog) -> None:
    """Refuse an other cost in another currency than the catalog's: one comparison uses one currency."""
    for number, cost in enumerate(protocol.other_costs, 1):
        if cost.currency != catalog.currency:
            raise GpucostError(f"{protocol.path}: other_costs[{number}] ({cost.label}) is in {cost.currency}, the catalog "
                               f"{catalog.path} in {catalog.currency}; one comparison uses one currency")


def _decided(configs: list[Configuration], protocol: Protocol, catalog: Catalog, today: dt.date, table: pd.DataFrame
             ) -> tuple[list[Assessment], Choice, str, dict, StagePlan | None]:
    """Every configuration assessed against the protocol and the catalog, the one choice made of them (read by the
    tables, the note and the decision run alike) once its confirmation runs are read and every device of a second
    stage has reported, the decision note, the chosen configurations' confirmation verdicts and the latest stage."""
    confidence, count = _looked(protocol, table)
    assessments = assess(configs, Rules(
        catalog, protocol.plan, protocol.deadline, protocol.deliverables["expected"],
        required_passes=protocol.passes_per_variant, max_spread_ratio=protocol.max_spread_ratio,
        side_by_side=bool(protocol.deliverables.get("side_by_side")), inputs_per_deliverable=protocol.corpus_size,
        today=today, max_price_age_days=protocol.max_price_age_days, confidence=confidence,
        looks=count,
        per_child=protocol.deliverables["per_child"], audit=audit_rule(
            protocol.deliverables["audit"], protocol.acceptance.reference_variant, protocol.corpus_size)))
    choice = choose(assessments, deadline_declared=protocol.deadline is not None)
    stage = latest_stage(table)
    if stage is not None:
        missing = unreported(stage, progress(assessments))
        choice = await_stage(choice, assessments, {s.device: s.variants for s in stage.shares}, missing)
    confirmed = confirmations.verdicts(table, choice.chosen, protocol.corpus_size, protocol.confirmation[1])
    choice = hold(choice, confirmed)
    decision = decide(assessments, protocol.deliverables["expected"], protocol.corpus_size,
                      deadline_declared=protocol.deadline is not None, choice=choice)
    return assessments, choice, decision, confirmed, stage


def _looked(protocol: Protocol, table: pd.DataFrame) -> tuple[float, int]:
    """The confidence each separation is read at and the looks the protocol's is shared over: a second stage declared
    (`settle`) or run makes two looks, each at half the error rate (docs/costs.md, "Two looks at the data")."""
    count = looks(protocol.settle_max_passes, latest_stage(table) is not None)
    return per_look(protocol.confidence, count), count


def latest_stage(table: pd.DataFrame) -> StagePlan | None:
    """The latest second stage recorded on the passes (its plan over every device of its group), or None."""
    if "settle_plan" not in table or not (table["settle_plan"].fillna("") != "").any():
        return None
    rows = table[table["settle_plan"].fillna("") != ""].sort_values("start_time")
    return StagePlan.from_record(rows["settle_plan"].iloc[-1])


def progress(assessments: list[Assessment]) -> dict[tuple[str, str], Progress]:
    """Per (device, variant), where its configuration stands in a second stage (the least advanced one when the
    variant has several configurations on the device): counted passes, one running, one failed or rejected."""
    found: dict[tuple[str, str], Progress] = {}
    for a in assessments:
        statuses = a.configuration.statuses
        mine = Progress(len(a.configuration.durations.values), Status.RUNNING in statuses,
                        Status.FAILED in statuses or Status.REJECTED in statuses)
        key = (a.configuration.device, a.configuration.variant)
        found[key] = min(found.get(key, mine), mine, key=lambda p: (not p.running, p.counted))
    return found


def excluded_per_variant(table, client: MlflowClient, experiment: str) -> list[model.VariantExclusions]:
    """Every variant with its attempts counted and its excluded ones (cause, by, when), so one rule is seen applied to all."""
    details = {}
    if (table["status"] == Status.EXCLUDED).any():
        found = experiments.named(client, experiment)
        details = {x.run_id: x for x in exclusions.listed(client, found.experiment_id)}
    result = []
    for variant, rows in table.groupby("variant", sort=False):
        excluded = []
        for run_id, device in rows.loc[rows["status"] == Status.EXCLUDED, ["run_id", "device"]].itertuples(index=False):
            x = details.get(run_id)
            excluded.append([device, run_id, x.cause, x.by, x.at] if x and x.cause else [device, run_id, "not recorded", "", ""])
        result.append(model.VariantExclusions(variant, len(rows), excluded))
    return result


def write(report: model.Report, balance: pd.DataFrame, out_dir: Path) -> dict[str, Path]:
    """Write the four files and each figure that names a file (cost against volume, durations, memory: PNG next to
    report.html, so the decision run logs them as artifacts) atomically; returns their paths."""
    paths = {name: out_dir / name for name in FILES}
    write_atomic(paths["report.md"], render.markdown(report).encode("utf-8"))
    write_atomic(paths["report.html"], render.page(report).encode("utf-8"))
    write_atomic(paths["attempts.csv"], report.attempts.to_csv(index=False).encode("utf-8"))
    write_atomic(paths["balance.csv"], balance.to_csv(index=False).encode("utf-8"))
    for figure in report.figures.values():
        if figure.file:
            paths[figure.file] = out_dir / figure.file
            write_atomic(paths[figure.file], figure.png)
    return paths


def _outside_campaigns(attempts: pd.DataFrame) -> int:
    """Benchmark passes run by hand, outside any campaign (a confirmation or deliverable run is never in one)."""
    if not len(attempts):
        return 0
    bench = attempts["role"] == "benchmark" if "role" in attempts else True
    return int(((attempts["campaign_id"].fillna("") == "") & bench).sum())


def log(experiment: str, report: model.Report, paths: dict[str, Path], client: MlflowClient | None = None) -> str:
    """Log the files as artifacts of a run tagged gpucost.role=decision (the UI shows report.html), named for what
    was decided, described by the decision note and the balance in short, with the chosen configuration's committed
    cost and forecast hours as metrics and the campaigns it read as tags."""
    client = client or store.client()
    experiment_id = experiments.named(client, experiment).experiment_id
    choice = report.choice
    ids = [cid for cid in dict.fromkeys(report.attempts["campaign_id"].fillna("")) if cid] if len(report.attempts) else []
    campaigns = decision_run.campaign_runs(client, experiment_id, ids)
    outside = _outside_campaigns(report.attempts)
    note = decision_text.decision_note(report, campaigns, experiment_id, outside)
    tags = {schema.NOTE: note, schema.DECISION: "decided" if choice.decided else "none",
            schema.DECISION_CAMPAIGNS: ",".join(campaigns)[:limits.TAG_VALUE]}
    metrics = {}
    if choice.decided:
        chosen = choice.chosen
        tags[schema.DECISION_VARIANT] = " or ".join(dict.fromkeys(a.configuration.label for a in chosen))
        tags[schema.DECISION_DEVICE] = " or ".join(dict.fromkeys(a.configuration.device for a in chosen))
        tags[schema.DECISION_CURRENCY] = chosen[0].currency
        metrics = decision_run.figures(chosen[0])
    named = short.names([a.configuration for a in report.assessments]).of
    found = doubt(choice.undecided)
    if found is not None:
        tags[schema.DECISION_RENT_DEVICE] = found.rent.configuration.device
        tags[schema.DECISION_RENT_OFFER] = found.plan.describe()[:limits.TAG_VALUE]
        tags[schema.DECISION_RUN] = found.fastest.configuration.name
    metrics.update(decision_run.candidate_figures({named(a.configuration): a for a in choice.chosen or choice.undecided},
                                                  found.in_doubt if found else None))
    params = {schema.DECISION_CATALOG: report.catalog[:limits.PARAM_VALUE], schema.DECISION_DEADLINE: report.deadline,
              schema.DECISION_EXPERIMENT: experiment}
    name = decision_text.decision_name(choice, report.example_prices, bool(report.what_if), named)
    run_id = decision_run.log_decision(client, experiment_id, decision_run.Decided(
        name, report.what_if_digest or report.protocol_digest, tags, params, metrics, list(paths.values()),
        _standings(report)))
    decision_run.price(client, experiment_id, _committed(report))
    currencies = {a.currency for a in report.assessments if a.plan is not None}
    if len(currencies) == 1:
        experiments.priced_in(client, experiment_id, currencies.pop())
    return run_id


def _committed(report: model.Report) -> dict[str, tuple[str, float]]:
    """Each pass's run id with its configuration's committed cost in this decision (priced ones that can be committed
    to: report/standing.py, `withheld`); none under a what-if protocol, which is not the experiment's decision."""
    if report.what_if or not len(report.attempts):
        return {}
    found = {}
    for a in report.assessments:
        if a.plan is not None and not standing.withheld(a, report.choice):
            amount = (schema.in_currency(schema.PASS_COMMITTED, a.currency), float(a.committed))
            found.update(dict.fromkeys(tables.rows_of(report.attempts, a.configuration)["run_id"], amount))
    return found


def _standings(report: model.Report) -> dict[str, str]:
    """Each pass's run id with its configuration's standing in this decision (chosen, tied, runner-up, rejected, ...:
    report/standing.py), `· what-if` added under example prices; none under a what-if protocol, which is not the
    experiment's decision."""
    if report.what_if or not len(report.attempts):
        return {}
    found = {}
    for a in report.assessments:
        word = decision_text.standing_tag(standing.role(a, report.choice), report.example_prices)
        found.update(dict.fromkeys(tables.rows_of(report.attempts, a.configuration)["run_id"], word))
    return found
