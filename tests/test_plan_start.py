"""No date in the past presented as a plan (issue 52, item 2): `plan.start: at_report` with the deadline as a duration
places the window at the moment the report is read, and the report prints that moment; the demo protocol uses it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.plan_start import AT_REPORT
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.money.catalog import example_catalog, load_catalog
from gpucost_mlflow.report import card, decided, sections
from gpucost_mlflow.report.build import Options, build
from tests.helpers import ROOT, VARIANTS, evidence_of
from tests.scenario import EXPERIMENT

pytestmark = pytest.mark.unit

DEMO = ROOT / "projects" / "protocol-demo.yaml"
NOW = dt.datetime(2027, 3, 1, 10, 0, tzinfo=dt.timezone.utc)


def demo_with(tmp_path, **fields) -> object:
    text = DEMO.read_text()
    for old, new in fields.items():
        text = text.replace(old, new)
    path = tmp_path / "protocol.yaml"
    path.write_text(text)
    return load_protocol(path)


def test_a_start_at_the_report_is_placed_when_the_report_is_read_with_its_deadline_so_many_hours_after():
    demo = load_protocol(DEMO)
    assert demo.plan["start"] == AT_REPORT and demo.deadline is None and demo.deadline_after_h == 96
    assert demo.deadline_words == "96 h after the report's reading (plan.start: at_report)"
    placed = demo.at(NOW)
    assert placed.plan["start"] == NOW and placed.deadline == NOW + dt.timedelta(hours=96)
    assert placed.plan["setup_hours"] == demo.plan["setup_hours"] and demo.plan["start"] == AT_REPORT  # a copy
    assert load_protocol(ROOT / "projects" / "protocol.yaml").at(NOW).plan["start"].year == 2026  # a date stays


@pytest.mark.parametrize("fields, message", [
    ({"start: at_report": 'start: "2026-11-30T09:00:00+01:00"'}, "'deadline' is a duration (96h): it needs plan.start: at_report"),
    ({"deadline: 96h": 'deadline: "2026-12-04T09:00:00+01:00"'}, "'deadline' must be a duration after the start (96h, 4d) when plan.start is at_report"),
    ({"deadline: 96h": "deadline: soon"}, "'deadline' must be a duration after the start"),
])
def test_a_duration_needs_a_start_at_the_report_and_a_start_at_the_report_needs_a_duration(tmp_path, fields, message):
    with pytest.raises(GpucostError, match=message.replace("(", r"\(").replace(")", r"\)")):
        demo_with(tmp_path, **fields)
    assert demo_with(tmp_path, **{"deadline: 96h": "deadline: 4d"}).deadline_after_h == 96


def test_the_demo_reports_its_window_from_the_moment_it_is_read_never_a_past_date(experiment, tmp_path):
    for variant, seconds in {"batch8-lengthgrouped": (2.15, 2.45, 2.25, 2.55, 2.3),
                             "batch8": (5.45, 5.25, 5.45, 5.4, 5.5)}.items():
        for value in seconds:
            experiment(variant, "AMD EPYC", value)
    catalog = tmp_path / "this-machine.csv"
    catalog.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))
    built, _ = build(evidence_of(EXPERIMENT), load_protocol(DEMO), DEMO, load_catalog(catalog), load_variants(VARIANTS),
                     options=Options(now=NOW))
    window = dict(card.lines(built))["Window"]
    assert "from this report's reading at 2027-03-01T10:00+00:00" in window and "past" not in window
    assert window.startswith("6.9 h forecast (4.0 h declared setup and waiting, 1 min comparison passes, 2.9 h for "
                             "4,000 deliverables)")  # setup apart from the passes and the deliverables
    assert "ends by 2027-03-01T17:11+00:00 from this report's reading" in window
    assert built.deadline == "2027-03-05T10:00:00+00:00" and "(met)" in window
    assert "Planned start 2027-03-01T10:00:00+00:00 (plan.start: at_report: the moment this report was read" in \
        sections.plan_text(built)


def test_a_deadline_after_the_reading_is_recorded_as_its_rule_and_the_moment_read_never_a_date_to_the_second(
        experiment, tmp_path):
    # The demo protocol's `deadline: 96h` after `plan.start: at_report` (issue 66): the decision run's params say the
    # rule and when the report was read, to the minute; a dated deadline stays a date.
    for value in (2.15, 2.45, 2.25, 2.55, 2.3):
        experiment("batch8-lengthgrouped", "AMD EPYC", value)
    catalog = tmp_path / "this-machine.csv"
    catalog.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))
    built, _ = build(evidence_of(EXPERIMENT), load_protocol(DEMO), DEMO, load_catalog(catalog), load_variants(VARIANTS),
                     options=Options(now=NOW.replace(second=16)))
    assert decided.deadline_params(built) == {"deadline": f"96 h after the report's reading (plan.start: {AT_REPORT})",
                                              "deadline_read_at": "2027-03-01T10:00+00:00"}
    fixed = demo_with(tmp_path, **{"start: at_report": 'start: "2027-03-01T09:00:00+00:00"',
                                   "deadline: 96h": 'deadline: "2027-03-05T09:00:00+00:00"'})
    built, _ = build(evidence_of(EXPERIMENT), fixed, DEMO, load_catalog(catalog), load_variants(VARIANTS),
                     options=Options(now=NOW))
    assert decided.deadline_params(built) == {"deadline": "2027-03-05T09:00:00+00:00"}
