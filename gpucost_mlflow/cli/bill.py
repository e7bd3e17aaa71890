"""What the money bought: `gpucost bill`, what was actually paid for the chosen plan, and with `--fleet` what each
GPU type's fleet job really rented."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import click

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.bill import note_of, parse_paid
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.report.bill import bill_lines, fleet_total_line


@click.command("bill")
@click.option("--experiment", required=True,
              help="The MLflow experiment whose latest decision run chose the plan paid for.")
@click.option("--paid", "paid_text", default=None, help="What was paid for the chosen plan, in its currency (118.40).")
@click.option("--currency", default=None, help="The plan's currency (the decision run's gpucost.decision.currency).")
@click.option("--note", default=None, help="One line kept with the bill (an invoice number, why it differs).")
@click.option("--fleet", "fleet_id", default=None, help="A fleet's id: what each GPU type's job really rented (every "
              "attempt, setup included), beside its worst case and the committed plan; recorded on the fleet run.")
def bill(experiment, paid_text, currency, note, fleet_id) -> None:
    """Record what was paid for the plan the experiment's latest decision run chose; the next `gpucost report` shows
    committed against paid. A second bill replaces the first; the run's description keeps every bill. With --fleet,
    say (and record) what the fleet's jobs really rented."""
    from gpucost_mlflow.tracking import decision_run, store  # deferred: imports mlflow

    if (paid_text is None) != (currency is None) or (paid_text is None and fleet_id is None):
        raise GpucostError("--paid and --currency go together (what was paid for the chosen plan, in its currency); "
                           "--fleet ID alone says what a fleet really rented; nothing recorded")
    paid = parse_paid(paid_text) if paid_text is not None else None
    note = note_of(note)
    if fleet_id is not None:
        _fleet_bill(experiment, fleet_id)
    if paid is None:
        return
    store.bound_http_retries()
    recorded, previous = decision_run.record_bill(store.client(), experiment, paid, currency, note)
    click.echo(f"bill recorded on decision run {recorded.run_id}: {' '.join(bill_lines(recorded))}")
    if previous is not None:
        click.echo(f"it replaces the bill of {money(previous.paid, previous.currency)} recorded {previous.at}, kept in "
                   "the run's description (Bill history)")


def _fleet_bill(experiment: str, fleet_id: str) -> None:
    """Each GPU type's (a delivery's: each lot's) realized rental beside its worst case (its share of the committed
    forecast), then the fleet's beside the latest decision's committed plan; a delivery fleet's forecast held against
    it, recorded on the decision run it served once every lot has ended."""
    from gpucost_mlflow.fleet.delivery_status import delivery_status  # deferred: imports mlflow and SkyPilot
    from gpucost_mlflow.tracking import decision_run, delivery_held, experiments, store  # deferred: imports mlflow

    found = delivery_status(experiment, fleet_id)
    jobs = found.jobs
    against = "forecast (its share of the committed plan)" if found.delivery else "worst case"
    for job in jobs:
        click.echo(f"{job.gpu}: job {job.job_id or 'not launched'} {job.state}; {job.money()}; "
                   f"{against} {job.worst_cost or '(not recorded)'} USD")
    worst = [_amount(job.worst_cost) for job in jobs]
    client = store.client()
    committed, currency, said = decision_run.latest_committed(client, experiments.named(client, experiment).id)
    click.echo(fleet_total_line({job.gpu: job.realized for job in jobs}, any(job.partial for job in jobs),
                                None if None in worst else sum(worst, Decimal(0)), committed, currency,
                                f"run {said}" if committed is not None else said))
    if not found.delivery:
        return
    for line in found.lines[1:]:
        click.echo(line)
    if found.held is None:
        click.echo("Forecast held: not yet (recorded on the decision run once every lot has ended and is billed)")
        return
    delivery_held.record(client, found.decision_id, fleet_id, found.held)
    click.echo(f"recorded on decision run {found.decision_id}: {delivery_held.COST_RATIO} "
               f"{found.held.cost_ratio:.4f}, {delivery_held.WINDOW_RATIO} "
               + ("empty" if found.held.window_ratio is None else f"{found.held.window_ratio:.4f}")
               + "; the next `gpucost report` card gives them")


def _amount(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


COMMANDS = (bill,)
