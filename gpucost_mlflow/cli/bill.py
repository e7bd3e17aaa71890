"""What the money bought: `gpucost bill`, what was actually paid for the chosen plan."""

from __future__ import annotations

import click

from gpucost_mlflow.core.money.bill import note_of, parse_paid
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.report.bill import bill_lines


@click.command("bill")
@click.option("--experiment", required=True, help="The MLflow experiment whose latest decision run chose the plan paid for.")
@click.option("--paid", "paid_text", required=True, help="What was paid for the chosen plan, in its currency (118.40).")
@click.option("--currency", required=True, help="The plan's currency (the decision run's gpucost.decision.currency).")
@click.option("--note", default=None, help="One line kept with the bill (an invoice number, why it differs).")
def bill(experiment, paid_text, currency, note) -> None:
    """Record what was paid for the plan the experiment's latest decision run chose; the next `gpucost report` shows
    committed against paid. A second bill replaces the first; the run's description keeps every bill."""
    from gpucost_mlflow.tracking import decision_run, store  # deferred: imports mlflow

    paid = parse_paid(paid_text)
    note = note_of(note)
    store.bound_http_retries()
    recorded, previous = decision_run.record_bill(store.client(), experiment, paid, currency, note)
    click.echo(f"bill recorded on decision run {recorded.run_id}: {' '.join(bill_lines(recorded))}")
    if previous is not None:
        click.echo(f"it replaces the bill of {money(previous.paid, previous.currency)} recorded {previous.at}, kept in "
                   "the run's description (Bill history)")


COMMANDS = (bill,)
