"""A unit cost taken from the planned volume or the plan's capacity is a forecast, and says so wherever it stands
(issue 52, PROTOCOL.md: the cost per validated result stays empty until deliverables are validated, and a capacity
forecast never replaces accepted results). The scan reads every surface a report writes: the card, the decision
note, report.md, every CSV header, the decision run's description, tags and metric names, the passes' tags and
metric names."""

from __future__ import annotations

import csv
import re

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.report import card
from gpucost_mlflow.report.build import write
from tests.helpers import log_report
from tests.scenario import RTX, report
from tests.test_report import protocol_like_shipped

pytestmark = pytest.mark.unit

UNIT_COST = re.compile(r"per[ _](1,000|1000|million)(?![\d,])", re.IGNORECASE)  # '... USD per 1,000 ...', 'cost_per_1000_'
NAMED = re.compile(r"forecast|planned|validated", re.IGNORECASE)  # validated: from accepted deliverables only
PHRASE = re.compile(r"[;|\n]|\.\s|\((?=[^)]*\))|, (?=[a-z])")  # a phrase ends at ; | a full stop, a list's comma
PLANNED_UNIT = re.compile(r"per[ _](1,000|1000|million)[ _]planned[ _]inputs", re.IGNORECASE)  # the planning budget's


def unnamed(text: str) -> list[str]:
    """The phrases of text that give a unit cost without saying it is a forecast from planned volume (or a cost per
    validated result)."""
    return [phrase.strip() for phrase in PHRASE.split(text) if UNIT_COST.search(phrase) and not NAMED.search(phrase)]


def test_the_scan_finds_a_unit_cost_not_named_a_forecast():
    assert unnamed("0.60 USD committed. That is 0.15 USD per 1,000 inputs; 4 corpora") == [
        "That is 0.15 USD per 1,000 inputs"]
    assert unnamed("cost_per_1000_inputs_at_capacity") == ["cost_per_1000_inputs_at_capacity"]
    assert not unnamed("Planning budget (forecast): 0.15 USD per 1,000 planned inputs; 1.2 USD per 1,000 validated inputs")


def planned_units(text: str) -> set[str]:
    """The units the planning budget is given in: 'million' for '... per million planned inputs' and for the metric
    `forecast_cost_per_million_planned_inputs_usd`."""
    return {found.replace(",", "").lower() for found in PLANNED_UNIT.findall(text)}


def test_the_scan_reads_the_planning_budgets_unit_in_words_and_in_a_metric_name():
    assert planned_units("0.30 USD per million planned inputs; forecast_cost_per_1000_planned_inputs_usd") == {
        "million", "1000"}


def test_no_unit_cost_from_planned_volume_goes_unnamed_on_any_surface(experiment, tmp_path):
    for seconds in (100.0, 101.0, 99.0, 100.5, 100.2):
        experiment("batch8", RTX, seconds)
    for seconds in (130.0, 131.0, 129.0, 130.5, 130.2):
        experiment("batch4", RTX, seconds)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, drop_deadline=True, expected=4))
    assert built.choice.decided
    paths = write(built, balance, tmp_path / "report")
    run_id = log_report(built, paths)
    client = MlflowClient()
    decision = client.get_run(run_id)
    surfaces = {"card": "\n".join(f"{label}: {text}" for label, text in card.lines(built)),
                "decision note": built.decision,
                "report.md": paths["report.md"].read_text(encoding="utf-8")}
    for name, path in paths.items():
        if name.endswith(".csv"):
            with path.open(encoding="utf-8", newline="") as handle:
                surfaces[f"{name} header"] = "\n".join(next(csv.reader(handle)))
    surfaces["decision run tags"] = "\n".join(f"{key}\n{value}" for key, value in decision.data.tags.items())
    surfaces["decision run metrics"] = "\n".join(decision.data.metrics)
    passes = client.search_runs([decision.info.experiment_id], "params.`gpucost.role` = 'benchmark'")
    assert passes
    surfaces["pass tags"] = "\n".join(f"{key}\n{value}" for run in passes for key, value in run.data.tags.items())
    surfaces["pass metrics"] = "\n".join(key for run in passes for key in run.data.metrics)
    assert "per million planned inputs" in surfaces["decision note"]  # the scan has something to read
    assert any(UNIT_COST.search(text) for text in surfaces["balance.csv header"].splitlines())
    found = {name: unnamed(text) for name, text in surfaces.items() if unnamed(text)}
    assert not found, found
    # One unit for the planning budget on every surface, the MLflow metric included (issue 66).
    units = {name: planned_units(text) for name, text in surfaces.items() if planned_units(text)}
    assert {"report.md", "decision note", "balance.csv header", "decision run metrics"} <= set(units), units
    assert set().union(*units.values()) == {"million"}, units
