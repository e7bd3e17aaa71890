"""The report leads with the answer (issue 30): a decision card of at most five lines before the question, short
names applied the same way in the card, the first table and the figures, the first table's constant columns said
once, and the two figures written as PNG files next to report.html. Known answers from tests/synthetic_report.py's
demo-like report: 2,000 corpora of 1,000 inputs on one CPU at 0.50 USD per billed hour, 4 h setup, 20 h deadline."""

from __future__ import annotations

import pandas as pd
import pytest

from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.decision import Configuration
from gpucost_mlflow.report import build, card, plots, render, sections, short
from gpucost_mlflow.report.cells import Table, lift
from tests.synthetic_report import CPU, decided_report

pytestmark = pytest.mark.unit

TIED = {"batch8-lengthgrouped": (5.8, 5.6, 6.0, 5.7, 5.7)}  # overlaps batch64-bf16-lg and costs the same
NOISE_PRICED = {"batch8-lengthgrouped": (5.7, 5.8, 5.9, 5.8, 8.0)}  # overlaps it, yet its slow pass costs more


@pytest.fixture(scope="module")
def decided() -> render.Report:
    return decided_report(figures=False)


def test_the_card_says_what_to_rent_what_to_run_the_window_the_runner_up_and_what_would_change_it(decided):
    # batch64-bf16-lg: 4 h setup + 0.172 h of attempts + 2,000 x (5.8 + 0.3) s = 7.56 h at the slowest pass -> 8 h
    # billed, 4.00 USD; batch8-lg: 2,000 x 8.0 s -> 8.62 h -> 9 h, 4.50 USD. In time up to (20 - 4.17) h / 6.1 s.
    assert card.lines(decided) == [
        ("Rent", ("4.00 USD committed for cpu hourly, 1 lot, 8 h billed (min 1 h, per 1 h); an example price, not a "
                 "quote")),
        ("Run", (f"batch64-bf16-lg on {CPU}: 0.0020 USD per 1,000 inputs forecast at the committed cost (2,000 corpora of "
                 "1,000 inputs; quality bar met on the comparison corpus, no deliverable accepted yet)")),
        ("Window", ("7.5 h forecast, 7.6 h at the slowest pass, ends by 2026-10-01T16:33; deadline 2026-10-02T05:00:00 "
                   "(met)")),
        ("Runner-up", "batch8-lg at 4.50 USD (0.50 USD more, +12.5 %)"),
        ("Would change it", ("no break-even: it stays the cheapest wherever the others meet the deadline; above 9,340 "
                            "corpora it misses the deadline")),
    ]


def test_a_tie_is_said_in_the_card_with_the_passes_that_would_settle_it():
    lines = dict(card.lines(decided_report(changed=TIED, figures=False)))
    assert lines["Run"].startswith("any of 2 tied (batch64-bf16-lg, batch8-lg; their durations do not separate) on "
                                   f"{CPU}: 0.0020 USD")
    assert lines["Runner-up"] == "batch8 at 5.50 USD (1.50 USD more, +37.5 %)"
    assert lines["Would change it"].endswith("about 23 passes per configuration would separate batch64-bf16-lg from "
                                             "batch8-lg (Noether's estimate for the separation test, 80 % power)")


def test_an_undecided_choice_says_so_and_how_many_passes_would_settle_it():
    lines = card.lines(decided_report(changed=NOISE_PRICED, figures=False))
    assert lines == [
        ("No decision", "undecided: the price difference is bought by noise (PROTOCOL.md §6)"),
        ("Between", ("batch64-bf16-lg at 4.00 USD, batch8-lg at 4.50 USD: their durations do not separate, yet their "
                    "slowest-pass plans differ in price")),
        ("Would settle it", "about 9 passes per configuration would separate batch64-bf16-lg from batch8-lg"),
    ]


def test_no_decision_names_the_reason_and_what_would_change_it():
    lines = card.lines(decided_report(priced_device="NVIDIA B200", figures=False))
    assert lines == [("No decision", "nothing priced"),
                     ("Would change it", ("a catalog row for the device measured, or a what-if catalog "
                                         "(`gpucost catalog example`)")),
                     ("Measured on", CPU)]


def test_the_card_comes_first_then_the_question_and_protocol_then_the_first_table(decided):
    md = render.markdown(decided)
    top = md.split("\n")
    assert top[2].startswith("- **Rent:** 4.00 USD") and top[6].startswith("- **Would change it:**")
    assert md.index("**Would change it:**") < md.index("**Question.**") < md.index("Protocol digest")
    assert md.index("Protocol digest") < md.index("| configuration | standing |") < md.index("**Decision note.**")
    page = render.page(decided)
    assert page.index('id="card"') < page.index("<b>Question.</b>") < page.index('id="decision"')


def test_the_first_table_uses_short_names_and_says_its_constant_columns_once(decided):
    table, sentence = sections.first_table(decided)
    assert sentence == (f"Every configuration ran on {CPU}; short names: lg = lengthgrouped. The same in every row: "
                        "cost per validated corpus: undefined (no accepted deliverable).")
    assert "cost per validated corpus" not in table.head and "deadline" in table.head  # batch1 misses it
    assert [row[0] for row in table.rows][:3] == ["batch64-bf16-lg", "batch8-lg", "batch8"]
    assert table.notes == ["5 rejected attempt(s) (a check failed)"]
    assert sections.summary_table(decided).rows[0][1] == "batch64-bf16-lengthgrouped"  # the full name further down


def test_constant_columns_leave_the_table_and_its_footnotes_are_renumbered():
    table = Table("t", ["name", "same", "differs"])
    table.rows = [["a", f"empty {table.note('not measured')}", f"late {table.note('missed by 2 h')}"],
                  ["b", f"empty {table.note('not measured')}", "met"]]
    lifted, same = lift(table)
    assert same == [("same", "empty (not measured)")]
    assert lifted.head == ["name", "differs"] and lifted.rows == [["a", "late [1]"], ["b", "met"]]
    assert lifted.notes == ["missed by 2 h"]
    one = Table("one", ["name", "x"], [["a", "1"]])
    assert lift(one) == (one, [])


def configuration(variant: str, device: str = CPU) -> Configuration:
    return Configuration(device=device, variant=variant, statuses=[], durations=Durations(()), medians={})


def test_short_names_abbreviate_the_variant_and_name_a_shared_device_once():
    assert short.variant("batch64-bf16-lengthgrouped [torch 2.13.0]") == "batch64-bf16-lg [torch 2.13.0]"
    assert short.device("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert short.device("Intel(R) Xeon(R) Processor") == "Intel Xeon"
    one = short.names([configuration("batch8-lengthgrouped"), configuration("batch8")])
    assert (one.device, one.short[f"batch8-lengthgrouped on {CPU}"]) == (CPU, "batch8-lg")
    two = short.names([configuration("batch8", "NVIDIA B200"), configuration("batch8", "NVIDIA GeForce RTX 4090")])
    assert two.device == "" and sorted(two.short.values()) == ["batch8 on B200", "batch8 on RTX 4090"]


def test_two_configurations_whose_short_names_collide_keep_their_full_names():
    found = short.names([configuration("a-lengthgrouped"), configuration("a-lg")])
    assert sorted(found.short.values()) == [f"a-lengthgrouped on {CPU}", f"a-lg on {CPU}"]
    assert found.abbreviations == ()


def test_a_duration_far_from_its_configurations_median_is_an_outlier():
    assert plots.outliers((10.0, 10.1, 10.2, 10.1, 14.0)) == (4,)
    assert plots.outliers((10.0, 10.0, 10.0, 10.0, 10.5)) == ()  # within a tenth of the median
    assert plots.outliers((5.0, 9.0)) == ()


def test_both_figures_are_written_as_png_next_to_report_html_and_returned_for_the_decision_run(tmp_path):
    report = decided_report()
    paths = build.write(report, pd.DataFrame(), tmp_path)
    assert sorted(paths) == ["attempts.csv", "balance.csv", "cost-volume.png", "durations.png", "report.html",
                             "report.md"]
    for name in ("cost-volume.png", "durations.png"):
        assert paths[name].read_bytes().startswith(b"\x89PNG") and paths[name].parent == paths["report.html"].parent
    assert report.figures["cost_volume"].alt.startswith("Committed cost against volume (USD")
    assert "batch64-bf16-lg (chosen), batch8-lg (runner-up), batch8-int8 (rejected)" in report.figures["cost_volume"].alt
    page = paths["report.html"].read_text()
    assert page.index('alt="Committed cost against volume') < page.index('id="decision"') < page.index('id="durations"')
    assert "![Committed cost against volume" in paths["report.md"].read_text()
    assert "Committed cost per configuration" not in page and not hasattr(plots, "cost")  # the bar chart went
