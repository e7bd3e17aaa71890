"""The decision run: the report's files and the decision's figures logged as one run tagged gpucost.role=decision.

report/decided.py decides what the run says (`Decided`, tracking/decision_record.py: its name, description, tags,
metrics already named with their unit and rounded, params, files, each pass's standing and committed cost); every
write of it happens here, in the order the UI needs: the run with its role, then its figures in one log_batch, then
its files. Once it is logged, the experiment's older decision runs are marked superseded (tag and description), each
pass gets its configuration's standing in this decision (the tag `gpucost.standing`, a column of the printed link's
view) and committed cost, and gpucost's views show the decision's currency.

The bill (`gpucost bill`) is written here too: what was paid for the plan the experiment's latest decision run
chose, as tags and the metric `paid_<currency>` on that run (one log_batch), a second bill replacing the first while
the run's description keeps every bill under "Bill history"; `latest_bill` reads it back for the next report.
"""

from __future__ import annotations

import time
from decimal import Decimal, InvalidOperation

from mlflow.entities import Metric, Param, Run, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money import bill as bills
from gpucost_mlflow.core.money.bill import Bill
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.core.names import RATE_VS_SLOWEST
from gpucost_mlflow.tracking import descriptions, experiments, limits, schema, search
from gpucost_mlflow.tracking.decision_record import Decided
from gpucost_mlflow.tracking.descriptions import SEP

NEWEST_FIRST = ["attributes.start_time DESC"]
DECISIONS = f"tags.`{schema.ROLE}` = '{schema.DECISION_ROLE}'"
# The description's section of bills: its heading, what it says, and the line standing for bills left out of it.
BILL_HISTORY = "### Bill history"
BILL_HISTORY_SAYS = "Each bill recorded with `gpucost bill`, oldest first (UTC); the last one is the current bill."
LEFT_OUT = " earlier bill(s) left out: a description holds at most "


def log_decision(client: MlflowClient, experiment_id: str, decided: Decided) -> str:
    """Create the decision run, log its tags, params and metrics (one log_batch) and its files; then mark the
    experiment's older decision runs superseded, tag each pass with its standing, give each its committed cost and
    show the views in the decision's currency. Returns the new run's id."""
    run = client.create_run(experiment_id, run_name=decided.name, tags={
        schema.ROLE: schema.DECISION_ROLE, schema.PROTOCOL_DIGEST: decided.protocol_digest,
    })
    now = run.info.start_time
    client.log_batch(run.info.run_id, metrics=[Metric(k, v, now, 0) for k, v in decided.metrics.items()],
                     params=[Param(k, v) for k, v in decided.params.items()],
                     tags=[RunTag(k, v) for k, v in decided.tags.items()])
    for path in decided.files:
        client.log_artifact(run.info.run_id, str(path))
    client.set_terminated(run.info.run_id, "FINISHED")
    supersede(client, experiment_id, run.info.run_id, decided.name, what_if(decided.tags, decided.name))
    stand(client, experiment_id, decided.standings)
    confirm_runs(client, decided.confirmations)
    experiments.present(client, experiment_id)
    if decided.committed:
        price(client, experiment_id, decided.committed)
    if decided.currency:
        experiments.priced_in(client, experiment_id, decided.currency)
    return run.info.run_id


def stand(client: MlflowClient, experiment_id: str, standings: dict[str, str]) -> int:
    """Tag each pass with its standing (run id -> standing), writing only those whose standing changed: a report
    over thousands of passes repeats few writes. Returns how many were written."""
    written = 0
    for value in dict.fromkeys(standings.values()):
        quoted = value.replace("'", "\\'")
        have = {found.info.run_id for found in search.all_runs(client, experiment_id,
                                                               f"tags.`{schema.STANDING}` = '{quoted}'", order_by=None)}
        for run_id in [run_id for run_id, standing in standings.items() if standing == value and run_id not in have]:
            client.set_tag(run_id, schema.STANDING, value)
            written += 1
    return written


def confirm_runs(client: MlflowClient, verdicts: dict[str, tuple[str, float | None]]) -> int:
    """Give each confirmation run its verdict in this decision (the tag `gpucost.confirmation`) and its rate over the
    slowest benchmark pass's (`rate_vs_slowest_benchmark`), the columns of the confirmation runs' view, its description
    said again with them; only runs whose verdict or rate changed are written, and the reference's outputs keep their
    mark. Returns how many were written."""
    written = 0
    for run_id, (verdict, ratio) in verdicts.items():
        run = client.get_run(run_id)
        tags, metrics = run.data.tags, run.data.metrics
        shown = None if ratio is None else round(ratio, 3)
        if tags.get(schema.CONFIRMATION) == schema.REFERENCE_OUTPUTS or (
                tags.get(schema.CONFIRMATION) == verdict and metrics.get(RATE_VS_SLOWEST) == shown):
            continue
        now = int(time.time() * 1000)
        note = descriptions.pass_note({**schema.run_facts(run), schema.CONFIRMATION: verdict}, metrics)
        client.log_batch(run_id, metrics=[Metric(RATE_VS_SLOWEST, shown, now, 0)] if shown is not None else [],
                         tags=[RunTag(schema.CONFIRMATION, verdict), RunTag(schema.NOTE, note)])
        written += 1
    return written


def price(client: MlflowClient, experiment_id: str, committed: dict[str, tuple[str, float]]) -> int:
    """Give each pass its configuration's committed cost in the latest decision as a metric (run id -> (metric key
    with its currency, amount)), so the passes view shows what each configuration commits to; only passes whose
    latest value differs are written. Returns how many were written."""
    written = 0
    for run in search.all_runs(client, experiment_id, f"tags.`{schema.VARIANT}` != ''", order_by=None):
        key, amount = committed.get(run.info.run_id, ("", 0.0))
        if key and run.data.metrics.get(key) != amount:
            client.log_metric(run.info.run_id, key, amount)
            written += 1
    return written


def what_if(tags: dict, name: str) -> bool:
    """Whether a decision run is a what-if (example prices, or a what-if protocol): its tag, or for a run logged
    before the tag its name's ending."""
    return bool(tags.get(schema.DECISION_WHAT_IF)) or f"{SEP}{schema.WHAT_IF}" in name


def supersede(client: MlflowClient, experiment_id: str, newest_id: str, newest_name: str,
              newest_what_if: bool = False) -> list[str]:
    """Tag every older decision run of the experiment superseded by the newest one and say so first in its
    description (a bill history at its end kept); a run already superseded is left as it is, and a what-if never
    supersedes a decision on a provider catalog (only an older what-if). Returns their ids."""
    marked = []
    for run in list(search.all_runs(client, experiment_id, DECISIONS, order_by=None)):
        tags = run.data.tags
        if run.info.run_id == newest_id or tags.get(schema.SUPERSEDED_BY):
            continue
        if newest_what_if and not what_if(tags, run.info.run_name or ""):
            continue
        note = tags.get(schema.NOTE, "")
        entries, left_out = _history(note)
        described = descriptions.superseded_note(note.partition(f"\n\n{BILL_HISTORY}\n")[0], newest_id, newest_name,
                                                 experiment_id)
        if entries or left_out:
            described = billed_note(described, entries, left_out)
        client.log_batch(run.info.run_id, tags=[RunTag(schema.SUPERSEDED_BY, newest_id),
                                                RunTag(schema.NOTE, described)])
        marked.append(run.info.run_id)
    return marked


def latest_decision(client: MlflowClient, experiment_id: str) -> Run | None:
    """The decision a bill or a delivery acts on: the experiment's newest decision run on a provider catalog (a newer
    one that chose nothing included: the caller refuses), else, with only what-ifs logged, its newest what-if; None
    when `gpucost report` never logged one. A what-if, at example prices, never stands in for the provider's
    decision, as it never supersedes it."""
    runs = client.search_runs([experiment_id], filter_string=DECISIONS, order_by=NEWEST_FIRST, max_results=100)
    provider = [run for run in runs if not what_if(run.data.tags, run.info.run_name or "")]
    return (provider or runs or [None])[0]


def latest_committed(client: MlflowClient, experiment_id: str) -> tuple[Decimal | None, str, str]:
    """The committed cost of the plan the experiment's latest decision run chose, its currency and the run's id; with
    no plan chosen, (None, "", why)."""
    run = latest_decision(client, experiment_id)
    if run is None:
        return None, "", "no decision run yet (`gpucost report` logs one)"
    committed = _committed(run)
    if run.data.tags.get(schema.DECISION) != schema.DECIDED or committed is None:
        return None, "", f"the latest decision run {run.info.run_id} chose no plan"
    return committed, run.data.tags.get(schema.DECISION_CURRENCY, ""), run.info.run_id


def record_bill(client: MlflowClient, experiment: str, paid: Decimal, currency: str, note: str,
                at: str | None = None) -> tuple[Bill, Bill | None]:
    """Record what was paid for the plan chosen on the experiment's latest decision run: its bill tags, the metric
    `paid` and the run's description with the bill appended to its history, in one log_batch. Returns the bill
    and the one it replaced (None for the first). Refused in one line, nothing written, when the experiment is
    unknown, has no decision run, its latest one chose no plan, or the currency is not the plan's."""
    found = experiments.named(client, experiment)
    run = latest_decision(client, found.id)
    if run is None:
        raise GpucostError(f"experiment '{experiment}' has no decision run: run `gpucost report --experiment "
                           f"{experiment}` first, then bill the plan it chose; nothing recorded")
    tags = run.data.tags
    if tags.get(schema.DECISION) != schema.DECIDED or not tags.get(schema.DECISION_CURRENCY):
        raise GpucostError(f"the latest decision run {run.info.run_id} of experiment '{experiment}' decided nothing "
                           f"(no plan was chosen): there is no plan to bill; nothing recorded")
    currency = bills.currency_of(currency, tags[schema.DECISION_CURRENCY])
    note = bills.note_of(note)
    previous = bill_of(run)
    bill = Bill(paid, currency, note, at or bills.stamp(), run.info.run_id, _committed(run))
    entries, left_out = _history(tags.get(schema.NOTE, ""))
    description = billed_note(tags.get(schema.NOTE, ""), [*entries, history_entry(bill)], left_out)
    step = len(entries) + left_out + 1
    client.log_batch(run.info.run_id,
                     metrics=[Metric(schema.in_currency(schema.PAID, currency), float(paid), int(time.time() * 1000),
                                     step)],
                     tags=[RunTag(schema.BILL_PAID, str(paid)), RunTag(schema.BILL_CURRENCY, currency),
                           RunTag(schema.BILL_NOTE, note), RunTag(schema.BILL_AT, bill.at),
                           RunTag(schema.NOTE, description)])
    return bill, previous


def latest_bill(client: MlflowClient, experiment_id: str) -> Bill | None:
    """The bill on the experiment's newest decision run that carries one (a report logged after the bill has
    none of its own), with that run's committed cost; None when no bill was recorded."""
    runs = client.search_runs([experiment_id], filter_string=f"{DECISIONS} AND tags.`{schema.BILL_PAID}` != ''",
                              order_by=NEWEST_FIRST, max_results=1)
    return bill_of(runs[0]) if runs else None


def bill_of(run: Run) -> Bill | None:
    """The bill a decision run carries, or None (no bill, or one whose amount cannot be read)."""
    tags = run.data.tags
    try:
        paid = Decimal(tags.get(schema.BILL_PAID, ""))
    except InvalidOperation:
        return None
    return Bill(paid, tags.get(schema.BILL_CURRENCY, ""), tags.get(schema.BILL_NOTE, ""), tags.get(schema.BILL_AT, ""),
                run.info.run_id, _committed(run))


def _committed(run: Run) -> Decimal | None:
    """The run's committed cost to the cent (logged as a float metric in its plan's currency; under the bare name
    on runs logged before the unit was named), None when it has none."""
    currency = run.data.tags.get(schema.DECISION_CURRENCY, "")
    metrics = run.data.metrics
    value = metrics.get(schema.in_currency(schema.COMMITTED_COST, currency)) if currency else None
    value = metrics.get(schema.COMMITTED_COST) if value is None else value
    return None if value is None else Decimal(f"{value:.2f}")


def history_entry(bill: Bill) -> str:
    """One bill in the description's history: its UTC time, amount, currency and note."""
    return f"- {bill.at}: {money(bill.paid, bill.currency)}" + (f"; {bill.note}" if bill.note else "")


def _history(note: str) -> tuple[list[str], int]:
    """The bills a description lists (its "Bill history" entries, oldest first) and how many were left out of it."""
    _, marker, section = note.partition(f"\n\n{BILL_HISTORY}\n")
    if not marker:
        return [], 0
    entries = [line for line in section.splitlines() if line.startswith("- ")]
    left_out = next((int(line.split(LEFT_OUT)[0].split()[-1]) for line in section.splitlines() if LEFT_OUT in line), 0)
    return entries, left_out


def billed_note(note: str, entries: list[str], left_out: int = 0, limit: int = limits.TAG_VALUE) -> str:
    """The description with its "Bill history" section (the earlier one replaced) listing the entries, oldest
    first. Under MLflow's limit on a tag: the decision note above it is cut first (report.md keeps it whole), then
    the oldest bills are left out, counted."""
    base = note.partition(f"\n\n{BILL_HISTORY}\n")[0]
    entries = list(entries)

    def section() -> str:
        lines = ["", "", BILL_HISTORY, "", BILL_HISTORY_SAYS, ""]
        if left_out:
            lines += [f"{left_out}{LEFT_OUT}{limit:,} characters.", ""]
        return "\n".join(lines + entries)

    room = 200  # what is kept of the decision note, at least, when bills need the space
    while len(entries) > 1 and len(section()) > limit - room:
        entries.pop(0)
        left_out += 1
    text = section()
    if len(base) + len(text) > limit:
        base = base[: max(limit - len(text) - 2, 0)] + " …"
    return (base + text)[:limit]
