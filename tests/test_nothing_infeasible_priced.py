"""Nothing infeasible priced (issue 52, point 3): a configuration that cannot be committed to (rejected, failed,
under-sampled, quality not shown, unstable, late, not confirmed) shows its reason where a price would be, in every
table, balance.csv, the decision run's description, tags and metrics and the passes' metric, and the cost figure draws
none of them; a configuration without a memory peak draws no bar of 0 MiB and the memory figure says why."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.report import plots, render, sections, short, standing
from gpucost_mlflow.report.tables import Summary
from gpucost_mlflow.tracking import schema
from tests.helpers import log_report
from tests.scenario import B200, report
from tests.synthetic_report import decided_report

pytestmark = pytest.mark.unit

REJECTED = "5 rejected attempt(s) (a check failed)"
NOT_COMMITTED = f"not committed: {REJECTED}"


def _a_figure(value) -> bool:
    """Whether a balance.csv value is a figure (a price, a count of a plan's capacity), not empty nor a reason."""
    return not (value is None or (not isinstance(value, str) and pd.isna(value))) and str(value)[:1].isdigit()


def test_a_rejected_configuration_shows_its_reason_not_a_price_in_every_table_and_the_description(experiment):
    runs = {"batch8": [], "batch4": []}
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        runs["batch8"].append(experiment("batch8", B200, seconds))
        runs["batch4"].append(experiment("batch4", B200, seconds * 0.9, status="rejected", quality="failed",
                                         reason="macro_f1 below the bar"))
    built, balance = report()
    rejected = next(a for a in built.assessments if a.configuration.variant == "batch4")
    assert not rejected.feasible and rejected.plan is not None  # it has a would-be plan: none of it is shown
    # The decision run (the demo's description priced its rejected batch8-int8): its description's row, its
    # metrics and tags, and the passes' committed metric.
    client = MlflowClient()
    run = client.get_run(log_report(built, {}, client))
    note = run.data.tags[schema.NOTE].replace("&nbsp;", "")  # the description's table pads its cells
    (line,) = [line for line in note.splitlines() if line.startswith("| batch4 ")]
    assert NOT_COMMITTED in line and "USD" not in line
    assert not [key for key in run.data.metrics if "batch4" in key]
    assert not [key for key, value in run.data.tags.items() if key != schema.NOTE and "batch4" in value]
    for run_id in runs["batch4"]:
        assert f"{schema.PASS_COMMITTED}_usd" not in client.get_run(run_id).data.metrics
    assert all(f"{schema.PASS_COMMITTED}_usd" in client.get_run(run_id).data.metrics for run_id in runs["batch8"])
    # The report's tables: the reason where the price was, never a price; the chosen one keeps its price.
    for table in (sections.plan_table(built), sections.decision_table(built), sections.first_table(built)[0]):
        committed = table.head.index("committed")
        row = next(r for r in table.rows if "batch4" in " ".join(map(str, r[:2])))
        assert row[committed] == f"not committed {table.note(NOT_COMMITTED)}"
        assert not any("USD" in str(value) for value in row), row
        assert next(r for r in table.rows if "batch8" in " ".join(map(str, r[:2])))[committed].endswith("USD")
    assert not [line for line in render.markdown(built).splitlines() if "batch4" in line and "USD" in line]
    assert not re.search(r"batch4[^.;]*USD", built.decision)
    # balance.csv: the reason in its package column, no figure in any money or plan column.
    row = balance[balance["variant"] == "batch4"].iloc[0]
    assert row["package"] == NOT_COMMITTED and not row["currency"]
    priced = [c for c in balance.columns if any(w in c for w in ("cost", "plan", "saving", "spare", "capacity"))]
    assert not {c: row[c] for c in priced if _a_figure(row[c])}
    assert _a_figure(balance[balance["variant"] == "batch8"].iloc[0]["committed_cost"])
    assert standing.withheld(rejected, built.choice) == REJECTED  # the one rule every place above asks


def test_the_cost_figure_draws_no_infeasible_configuration():
    # The demo-like report: batch8-int8 rejected (the fastest), batch16 under-sampled, batch1 late.
    decided = decided_report()
    out = {"batch8-int8": standing.INFEASIBLE, "batch16": standing.UNDER_SAMPLED, "batch1": standing.LATE}
    assert {a.configuration.variant: standing.role(a, decided.choice) for a in decided.assessments
            if a.configuration.variant in out} == out
    figure = decided.figures["cost_volume"]
    labels = " ".join(line.get_label() for line in figure.drawing.axes[0].get_lines())
    for variant in out:
        assert f"{variant} (" not in figure.alt and f"{variant} (" not in labels
    assert "batch64-bf16-lg (chosen), batch8-lg (costs more);" in figure.alt
    # Every configuration late (a 5 h deadline after 4 h of setup): no decision, and no curve of a late one.
    late = decided_report(deadline_h=5.0)
    assert late.choice.none == "deadline missed"
    drawn = late.figures["cost_volume"]
    assert drawn.alt == ("Committed cost against volume: nothing priced that can be committed to, no committed cost "
                         "to draw")
    assert not drawn.drawing.axes[0].get_lines()
    assert not standing.drawn(late.decided)


def test_a_missing_memory_peak_draws_no_zero_bar_and_says_why():
    decided = decided_report(figures=False)
    configs = [a.configuration for a in decided.assessments[:3]]
    names = short.names(configs)
    outside = "none: onnxruntime allocates GPU memory outside torch's counters"
    summaries = [Summary(configs[0], {"mem_peak_rss_bytes": 2 ** 30}, "rss", None, {}),
                 Summary(configs[1], {}, outside, None, {}),
                 Summary(configs[2], {}, "", None, {})]
    figure = plots.memory(summaries, names)
    bars = figure.drawing.axes[0].patches
    assert [bar.get_height() for bar in bars] == [1024.0]  # the one peak recorded; no bar of 0 MiB for the others
    assert figure.alt == (f"Peak memory per configuration and counter (not measured: {names.of(configs[1])}: "
                          f"onnxruntime allocates GPU memory outside torch's counters; {names.of(configs[2])}: no pass "
                          "of it recorded a peak)")
    texts = [text.get_text() for text in figure.drawing.axes[0].texts]
    assert texts.count(plots.NOT_MEASURED) == 2 and "onnxruntime" in figure.drawing.axes[0].get_xlabel()
    assert figure.png.startswith(b"\x89PNG")
    none = plots.memory(summaries[1:], names)  # no configuration recorded a peak: no axis of MiB at all
    assert not none.drawing.axes[0].patches and not none.drawing.axes[0].axison
    assert none.alt.startswith("Peak memory per configuration and counter: none recorded (not measured: ")
    assert "onnxruntime allocates GPU memory outside torch's counters" in none.drawing.axes[0].texts[0].get_text()
