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
@click.option("--experiment", required=True, help="The MLflow experiment whose latest decision run chose the plan paid for.")
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
    """Each GPU type's realized rental and worst case, then the fleet's beside the latest decision's committed plan."""
    from gpucost_mlflow.fleet.status import fleet_status  # deferred: imports mlflow and SkyPilot
    from gpucost_mlflow.tracking import decision_run, experiments, store  # deferred: imports mlflow

    jobs = fleet_status(experiment, fleet_id)
    for job in jobs:
        click.echo(f"{job.gpu}: job {job.job_id or 'not launched'} {job.state}; {job.money()}; "
                   f"worst case {job.worst_cost or '(not recorded)'} USD")
    worst = [_amount(job.worst_cost) for job in jobs]
    found = experiments.named(store.client(), experiment)
    committed, currency, said = decision_run.latest_committed(store.client(), found.id)
    click.echo(fleet_total_line({job.gpu: job.realized for job in jobs}, any(job.partial for job in jobs),
                                None if None in worst else sum(worst, Decimal(0)), committed, currency,
                                f"run {said}" if committed is not None else said))


def _amount(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


COMMANDS = (bill,)
