"""The report's second stage: from the evidence read once (tracking/evidence.py) to the decision report, with no
client: every configuration assessed against the protocol and the catalog, one choice, the Report every writer reads
and the balance; then report.md, report.html, attempts.csv and balance.csv written."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet.plan import priced_devices_hint
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.inputs.variants import Variant
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.money.catalog import Catalog, dated
from gpucost_mlflow.core.money.choice import NOTHING_PRICED
from gpucost_mlflow.core.money.decided import Decision
from gpucost_mlflow.core.money.decision import NO_DEADLINE, Configuration, Rules
from gpucost_mlflow.report import (
    alternatives,
    confirmations,
    deciding,
    excluded_alike,
    measuring,
    model,
    plots,
    render,
    seeded,
    tables,
)
from gpucost_mlflow.report.bill import bill_lines
from gpucost_mlflow.report.commands import command, settle_command
from gpucost_mlflow.report.configurations import identity_notes, rate_notes
from gpucost_mlflow.report.measured import ReportAttempts
from gpucost_mlflow.report.stage import looked, stage_notes
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.attempts_table import Attempt, protocol_warnings
from gpucost_mlflow.tracking.evidence import Evidence, Exclusion

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
                     "its rate stayed at or above its slowest benchmark pass's, the rate the committed plan is sized "
                     "at (in real tokens per second where both counted them: the confirmation corpus holds other "
                     "texts), on every one of its confirmation runs: one that did not hold is not retried away. A run "
                     "excluded for a documented cause (`gpucost exclude`), one interrupted before a result and the "
                     "reference's outputs are listed, not counted. A choice not confirmed is not committed "
                     "(docs/costs.md, \"Confirmation\").")
CHANGED_PROTOCOL = "protocol changed after results"  # protocol_warnings' warning, which a what-if supersedes


@dataclass(frozen=True)
class Options:
    """How one report is asked for: the passes re-judged first, a what-if's changes, its date, stale prices."""

    rejudged: tuple[str, ...] = ()  # the pending passes judged just before (their lines), said near the top
    what_if: str = ""  # what this protocol changes against the locked one (`changed deadline`), allowed as a what-if
    today: dt.date | None = None  # the date prices are aged against (the UTC date when not given)
    # when the report is read: a start at the report is placed there (UTC now if not given)
    now: dt.datetime | None = None
    allow_stale: bool = False  # price rows older than the protocol's max_price_age_days anyway
    variants_path: Path | None = None  # the variants file the report's exact commands name


def build(evidence: Evidence, protocol: Protocol, protocol_path: Path, catalog: Catalog,
          variants: dict[str, Variant], options: Options = Options()) -> tuple[model.Report, pd.DataFrame]:
    """Assess every configuration of the evidence against the protocol and the catalog, decide once, and compose the
    report of the evidence and that decision (report/deciding.py), with the balance.

    A what-if's changes are said in the title, the digest line and the decision note's first words (which replace
    the changed-protocol warning)."""
    _one_currency(protocol, catalog)
    now = options.now or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    at_report, protocol = protocol.starts_at_report, protocol.at(now)  # at_report: the window starts now
    today = options.today or now.date()
    catalog, prices = dated(catalog, today, protocol.max_price_age_days, options.allow_stale)
    measured = ReportAttempts.of(evidence.attempts)
    configs, seed_notes = seeded.configurations(measured, protocol)
    pairs = tables.pairs_to_separate(configs, variants)
    with tables.p_values_of(pairs) as p_values:  # computed beside the rest of the build where they are many
        table = measured.table  # built meanwhile: the configurations read the attempts alone
        warnings = _warnings(evidence, protocol, protocol_path, options, measured, configs) + seed_notes
        warnings += stage_notes(table, configs, protocol.settle_max_passes)
        warnings += excluded_alike.warnings(table, evidence.exclusions)
        decided = deciding.decision(configs, rules_of(protocol, catalog, today, table), protocol, measured)
        summaries = tables.summaries(measured, configs, protocol.acceptance.min_label_agreement)
        note, priced_hint = _note(decided, catalog, evidence, protocol_path, options)
        spent = measuring.spent(table, evidence.measuring)
        separations = tables.separated(pairs, p_values.result, protocol.passes_per_variant, *looked(protocol, table))
    experiment, choice = evidence.experiment.name, decided.choice
    report = model.Report(
        experiment=experiment, question=protocol.question,
        protocol_digest=evidence.experiment.tags.get(schema.PROTOCOL_DIGEST, protocol.digest),
        protocol_file=str(protocol_path), catalog=f"{catalog.version} ({catalog.path})", decision=note,
        warnings=warnings, attempts=table, summaries=summaries, separations=separations, decided=decided,
        deadline=protocol.deadline.isoformat() if protocol.deadline else NO_DEADLINE, plan=protocol.plan,
        overhead=overhead(measured.attempts, evidence.overheads), other_costs=protocol.other_costs,
        example_prices=catalog.example, exclusions=excluded_per_variant(measured.attempts, evidence.exclusions),
        exclusion_rule=protocol.exclusion_rule, passes_per_variant=protocol.passes_per_variant,
        settle=settle_command(experiment, protocol, protocol_path, catalog, options.variants_path, choice.undecided),
        priced_hint=priced_hint, reproduce=protocol.reproduce, seeds=protocol.seeds, written=today, read_at=now,
        start_at_report=at_report,
        confirm=command("confirm", experiment, protocol_path, options.variants_path, catalog),
        experiment_id=evidence.experiment.id, ui_root=evidence.ui_root, rejudged=list(options.rejudged),
        what_if=f"what-if protocol {protocol_path.name} ({options.what_if})" if options.what_if else "",
        what_if_digest=protocol.digest if options.what_if else "",
        lists=_lists(prices, protocol, today, options, decided, catalog, configs), bill=bill_lines(evidence.bill),
        delivered=evidence.delivered, measured=measured, spent=spent, spent_price=measuring.priced(spent, choice),
        figures=plots.Drawn(lambda: plots.for_report(summaries, decided)) if configs else {})
    return report, tables.balance(list(decided.shown), protocol.deadline, protocol.other_costs)


def _warnings(evidence: Evidence, protocol: Protocol, protocol_path: Path, options: Options,
              measured: ReportAttempts, configs: list[Configuration]) -> list[str]:
    """The protocol's warnings on these attempts (a what-if's own change not warned of) and those on the
    configurations' identities and rates."""
    return [w for w in protocol_warnings(measured.table, evidence.experiment.tags, protocol_path)
            if not (options.what_if and w.startswith(CHANGED_PROTOCOL))] + identity_notes(configs) + rate_notes(configs)


def _note(decided: Decision, catalog: Catalog, evidence: Evidence, protocol_path: Path, options: Options
          ) -> tuple[str, str]:
    """The decision note as the report says it, and the hint when nothing is priced: the devices the catalog does
    price and how to weigh them (what to do next); a what-if protocol's changes first."""
    note, hint = decided.note, ""
    if decided.choice.none == NOTHING_PRICED:
        hint = priced_devices_hint(catalog, evidence.experiment.name, [p for p in catalog.path.split(", ") if p],
                                   protocol_path=protocol_path, variants_path=options.variants_path)
        note = f"{note} {hint}" if hint else note
    return (f"What-if protocol ({options.what_if}): {note}" if options.what_if else note), hint


def _lists(prices: list[str], protocol: Protocol, today: dt.date, options: Options, decided: Decision,
           catalog: Catalog, configs: list[Configuration]) -> list[tuple[str, str, list[str]]]:
    """The bullet sections after the plan tables: prices and their age, hosted endpoints, offers priced elsewhere,
    offers not measured, the confirmation."""
    return [(PRICES_TITLE, PRICES_TEXT, prices),
            (alternatives.TITLE, alternatives.TEXT, alternatives.endpoint_lines(protocol, today, options.allow_stale)),
            (alternatives.ELSEWHERE_TITLE, alternatives.ELSEWHERE_TEXT,
             alternatives.elsewhere_lines(list(decided.assessments))),
            (NOT_MEASURED_TITLE, NOT_MEASURED_TEXT, _not_measured(catalog, {c.device for c in configs})),
            (CONFIRMATION_TITLE, CONFIRMATION_TEXT, confirmations.lines(decided.confirmations))]


def overhead(attempts: Sequence[Attempt], overheads: Mapping[str, float]) -> tuple[float | None, int, int]:
    """The harness overhead per pass by the campaign's one definition (flow/campaign.py: its wall time outside the
    timed parts, per pass), each campaign run's own figure (`overheads`, by campaign id) weighted by its attempts
    here: (seconds, attempts, campaigns); (None, 0, 0) when no campaign recorded one."""
    counts = {cid: sum(a.place.campaign_id == cid for a in attempts) for cid in overheads} if attempts else {}
    passes = sum(counts.values())
    if not passes:
        return None, 0, 0
    return sum(overheads[cid] * counts[cid] for cid in counts) / passes, passes, len(counts)


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
            raise GpucostError(f"{protocol.path}: other_costs[{number}] ({cost.label}) is in {cost.currency}, the "
                               f"catalog {catalog.path} in {catalog.currency}; one comparison uses one currency")


def rules_of(protocol: Protocol, catalog: Catalog, today: dt.date, table: pd.DataFrame) -> Rules:
    """What the protocol and the catalog fix before any timing, the rules every configuration of these attempts is
    assessed under (the report's and the race's, report/race.py, alike), at this look's confidence."""
    return Rules.of(protocol, catalog, today, *looked(protocol, table))


def excluded_per_variant(attempts: Sequence[Attempt], found: Mapping[str, Exclusion]) -> list[model.VariantExclusions]:
    """Every variant with its attempts counted and its excluded ones (cause, by, when: `found`, by run id), so one
    rule is seen applied to all."""
    by_variant: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_variant.setdefault(attempt.identity.variant, []).append(attempt)
    result = []
    for variant, each in by_variant.items():
        excluded = []
        for a in (a for a in each if a.status == Status.EXCLUDED):
            x = found.get(a.run_id)
            excluded.append([a.identity.device, a.run_id, x.cause, x.by, x.at] if x and x.cause
                            else [a.identity.device, a.run_id, "not recorded", "", ""])
        result.append(model.VariantExclusions(variant, len(each), excluded))
    return result


def write(report: model.Report, balance: pd.DataFrame, out_dir: Path) -> dict[str, Path]:
    """Write the four files and each figure that names a file (cost against volume, durations, memory: PNG next to
    report.html, so the decision run logs them as artifacts) atomically; returns their paths."""
    paths = {name: out_dir / name for name in FILES}
    texts = (render.markdown(report), render.page(report), report.attempts.to_csv(index=False),
             balance.to_csv(index=False))
    for name, text in zip(FILES, texts):
        write_atomic(paths[name], text.encode("utf-8"))
    for figure in report.figures.values():
        if figure.file:
            paths[figure.file] = out_dir / figure.file
            write_atomic(paths[figure.file], figure.png)
    return paths
