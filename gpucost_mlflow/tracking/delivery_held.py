"""A delivery's forecast held against what it realized, on the decision run it served (`gpucost bill --fleet`): the
ratios realized/forecast for cost and window hours and the cost per validated result as metrics, the line as a tag;
the next report's card reads it back (`latest_line`)."""

from __future__ import annotations

import time

from mlflow.entities import Metric, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.fleet.held import Held
from gpucost_mlflow.tracking import limits, schema

HELD, HELD_FLEET = schema.DELIVERY_HELD, schema.DELIVERY_FLEET
COST_RATIO, WINDOW_RATIO = "delivery_cost_ratio", "delivery_window_ratio"
DECISIONS = f"tags.`{schema.ROLE}` = '{schema.DECISION_ROLE}' AND tags.`{HELD}` != ''"


def record(client: MlflowClient, decision_run_id: str, fleet_id: str, held: Held) -> None:
    """The ratios, the realized rental, the accepted deliverables and the cost per validated result (when defined) as
    metrics of the decision run, with the line and the fleet as tags, in one log_batch."""
    now = int(time.time() * 1000)
    values = {COST_RATIO: held.cost_ratio, WINDOW_RATIO: held.window_ratio, "delivery_accepted": held.accepted,
              schema.in_currency("delivery_realized", held.currency): float(held.realized),
              schema.in_currency("delivery_cost_per_result", held.currency):
                  None if held.per_result is None else float(held.per_result)}
    client.log_batch(decision_run_id, metrics=[Metric(key, float(value), now, 0) for key, value in values.items()
                                               if value is not None],
                     tags=[RunTag(HELD, held.line()[:limits.TAG_VALUE]), RunTag(HELD_FLEET, fleet_id)])


def latest_line(client: MlflowClient, experiment_id: str) -> str:
    """The newest decision run's delivery line with its fleet and run ('' when no delivery was billed)."""
    runs = client.search_runs([experiment_id], filter_string=DECISIONS, order_by=["attributes.start_time DESC"],
                              max_results=1)
    if not runs:
        return ""
    tags = runs[0].data.tags
    return f"{tags[HELD].removeprefix('Forecast held: ')} (fleet {tags.get(HELD_FLEET, '?')}, decision run " \
           f"{runs[0].info.run_id})"
