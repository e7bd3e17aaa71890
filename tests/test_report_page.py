"""report.html and report.md read at a glance (issues 16, 30): the decision card first, then the question, the first
table and the decision note, repeated strings as footnotes, numbers that do not wrap, run ids linked to their page in
the MLflow UI, the pass count of the protocol in the header."""

from __future__ import annotations

import html

import pytest

from gpucost_mlflow.report import render, sections
from tests.synthetic_report import COUNTER, PEAK_REASON, synthetic_report

pytestmark = pytest.mark.unit

UNPRICED = "not priced: NVIDIA H200 141GB HBM3e has no package in 2025-01 (catalog/example.yaml)"


@pytest.fixture(scope="module")
def report() -> render.Report:
    return synthetic_report(figures=False)


def test_the_decision_comes_first_then_the_configurations_then_the_attempts(report):
    page = render.page(report)
    assert page.index('id="card"') < page.index("Question.") < page.index('id="decision"') < page.index("Decision note.")
    assert page.index("Decision note.") < page.index("Warning:") < page.index('id="summary"')
    assert page.index('id="summary"') < page.index('id="balance"') < page.index('id="attempts"')
    md = render.markdown(report)
    assert md.split("\n")[2].startswith("- **Rent:**") and md.index("**Question.**") < md.index("| configuration | standing |")
    assert md.index("| configuration | standing |") < md.index("**Decision note.**") < md.index("> **Warning:**")


def test_the_decision_table_puts_the_chosen_configuration_first_and_says_why_the_others_are_not(report):
    table = sections.decision_table(report)
    footnote = lambda cell: table.notes[int(cell.rsplit("[", 1)[1].rstrip("]")) - 1]
    (chosen, *_), (failed, infeasible, *_), (elsewhere, unpriced, *_) = table.rows
    assert (chosen, failed, elsewhere) == ("batch8-bf16-lengthgrouped [torch 2.13.0+cu128] on NVIDIA GeForce RTX 4090",
                                           "batch1 on NVIDIA GeForce RTX 4090",
                                           "batch32-bf16-lengthgrouped on NVIDIA H200 141GB HBM3e")
    first, _ = sections.first_table(report)  # the page opens with the same rows under their short names
    assert [row[0] for row in first.rows] == ["batch8-bf16-lg [torch 2.13.0+cu128] on RTX 4090", "batch1 on RTX 4090",
                                              "batch32-bf16-lg on H200 141GB HBM3e"]
    assert table.rows[0][1] == "chosen"
    assert infeasible.startswith("infeasible [") and footnote(infeasible) == "1 failed attempt(s) (did not complete the corpus)"
    assert unpriced.startswith("not priced [") and footnote(unpriced) == UNPRICED


def test_a_string_repeated_down_a_table_is_one_footnote_never_a_cell_on_every_row(report):
    page = render.page(report)
    assert page.count(html.escape(COUNTER)) == 1  # three configurations' memory cells point to one footnote
    peak_reason = html.escape(PEAK_REASON).replace("`gpucost doctor --peak`", "<code>gpucost doctor --peak</code>")
    assert page.count(peak_reason) == 2  # once under the per-configuration table, once under the checks
    assert page.count(html.escape(UNPRICED)) == 2  # once under the decision table, once under the plan table
    summary = sections.summary_table(report)
    assert [row[8] for row in summary.rows] == ["900 MiB RSS [1]", "600 MiB RSS [1]", "2,100 MiB allocated; 2,400 MiB reserved [4]"]
    assert [row[11] for row in summary.rows] == ["empty [2]"] * 3  # none compared with the reference: one footnote
    assert [row[13] for row in summary.rows][:2] == ["empty [3]", "empty [3]"]


def test_a_long_reason_that_differs_only_by_its_reference_run_is_one_footnote_naming_each_run():
    # The demo's batch8-int8 (issue 66): four rejected passes, each judged against the reference run of its round,
    # gave four copies of one 130-word reason; one footnote now names the four runs.
    from gpucost_mlflow.report.cells import Table

    runs = [str(n) * 32 for n in range(1, 5)]
    reason = ("reference_agreement: labels agree with reference run {0}: 94.00 % of 500 (95 % interval 91.55-95.92 %; "
              "bar 97.00 %); bucket_medium_macro_f1: about 160,497 needed at this value vs reference run {0}")
    table = Table("attempts", ["reason"])
    cells = [table.fold(reason.format(run)) for run in runs + runs[:1]]
    assert cells == ["reference_agreement [1]"] * 5 and len(table.notes) == 1
    assert table.notes[0] == reason.format("11111111, 22222222, 33333333, 44444444")
    assert table.fold(reason.replace("94.00", "93.00").format(runs[0])) == "reference_agreement [2]"  # other figures


def test_numbers_do_not_wrap_and_words_do_with_their_footnote_mark(report):
    page = render.page(report)
    assert '<td class="n">120.00 EUR</td>' in page and '<td class="n">2025-03-02T12:30</td>' in page
    assert '<td class="n">900 MiB RSS\u00a0[1]</td>' in page and "td.n{white-space:nowrap}" in page
    assert "<td>every check passed</td>" in page
    assert "<td>not priced\u00a0[" in page  # a footnote mark stays on its word's line


def test_inline_code_is_code_and_a_date_never_breaks_in_the_html_while_report_md_keeps_its_backticks():
    # Issue 66's leftovers: raw `backticks` in the HTML card, and 2026-10-01T16:33 broken at a hyphen at 600 px.
    from tests.synthetic_report import decided_report

    report = decided_report(figures=False, priced_device="another device")  # the card says `gpucost catalog example`
    page, md = render.page(report), render.markdown(report)
    card = page[page.index('id="card"'):page.index("</ul>", page.index('id="card"'))]
    assert "`" not in card and "<code>gpucost catalog example</code>" in card and "`gpucost catalog example`" in md
    assert "`" not in page.split("<body>", 1)[1]  # nowhere in the page's text
    assert '<span class="nw">2026-10-02T05:00:00</span>' in page and ".nw{white-space:nowrap}" in page
    assert "2026-10-02T05:00:00" in md and '<span class="nw">' not in md  # report.md as it was
    said = render.page(decided_report(figures=False))
    card = said[said.index('id="card"'):said.index("</ul>", said.index('id="card"'))]
    assert 'ends by <span class="nw">2026-10-01T16:33</span>; deadline <span class="nw">2026-10-02T05:00</span>' in card


def test_a_run_string_with_backticks_or_a_date_stays_text():
    from gpucost_mlflow.report.formats import html_text

    assert html_text("`<b>` at 2026-12-05T08:44+00:00") == ('<code>&lt;b&gt;</code> at '
                                                           '<span class="nw">2026-12-05T08:44+00:00</span>')


def test_the_memory_legend_names_each_counter_in_words_with_its_unit_never_its_metric_name(report):
    from gpucost_mlflow.report import plots, short

    figure = plots.memory(report.summaries, short.names([s.configuration for s in report.summaries]))
    legend = [text.get_text() for text in figure.drawing.axes[0].get_legend().get_texts()]
    assert legend == ["peak device memory allocated (MiB)", "peak device memory reserved (MiB)",
                      "peak resident memory, RSS (MiB)"]


def test_the_pass_count_in_the_header_is_the_protocols():
    assert "2 raw steady laps per configuration (passes_per_variant of the protocol)" in render.page(
        synthetic_report(passes_per_variant=2, figures=False))
    unknown = render.markdown(synthetic_report(passes_per_variant=None, figures=False))
    assert "Every raw steady lap of each configuration" in unknown and "five" not in unknown


def test_run_ids_link_to_the_run_page_and_open_outside_the_frame(report):
    run_id = f"{0:032x}"
    page = render.page(report)
    href = f"http://127.0.0.1:5000/#/experiments/7/runs/{run_id}?workflowType=machine_learning"
    assert (f'<a href="{href}" target="_blank" rel="noopener noreferrer" title="{run_id}">{run_id[:8]}</a>') in page
    assert f"[{run_id}]({href})" in render.markdown(report)


def test_a_tracking_server_is_linked_as_itself_and_a_run_without_its_experiment_by_the_direct_route(report):
    served = render.Report(**{**report.__dict__, "ui_root": "https://mlflow.example.org/team/", "experiment_id": ""})
    assert render.run_href(served, "abc") == "https://mlflow.example.org/team/#/runs/abc"
    plain = render.Report(**{**report.__dict__, "ui_root": ""})
    assert "<a href=" not in render.page(plain)


def test_run_links_open_the_tracking_server_the_report_read_else_where_mlflow_ui_serves():
    from gpucost_mlflow.tracking import ui

    assert ui.root("https://mlflow.example.org/team/") == "https://mlflow.example.org/team"
    assert ui.root("sqlite:////tmp/mlflow.db") == ui.root("file:///tmp/mlruns") == "http://127.0.0.1:5000"
