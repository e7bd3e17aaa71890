"""The report leads with the answer (issue 30): a decision card of at most five lines before the question, short
names applied the same way in the card, the first table and the figures, the first table's constant columns said
once, and the two figures written as PNG files next to report.html. Known answers from tests/synthetic_report.py's
demo-like report: 2,000 corpora of 1,000 inputs on one CPU at 0.50 USD per billed hour, 4 h setup, 20 h deadline."""

from __future__ import annotations

import pandas as pd
import pytest

from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.decision import Configuration
from gpucost_mlflow.report import build, card, formats, plots, render, sections, short
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
        ("Rent", ("4.00 USD committed for cpu hourly, 1 lot, 8 h billed (min 1 h, per 1 h), at 0.50 USD per lot-hour; "
                 "an example price, not a quote")),
        ("Run", (f"batch64-bf16-lg on {CPU} (no cost per result yet: no deliverable accepted; quality bar met on the "
                 "comparison corpus)")),
        ("Window", ("7.5 h forecast (4.0 h declared setup and waiting, 0.2 h comparison passes, 3.3 h for 2,000 "
                   "deliverables), 7.6 h at the slowest pass, ends by 2026-10-01T16:33; deadline 2026-10-02T05:00 "
                   "(met)")),
        ("Runner-up", "batch8-lg at 4.50 USD (0.50 USD more, +12.5 %)"),
        ("Would change it", ("no break-even: it stays the cheapest wherever the others meet the deadline; above 9,340 "
                            "corpora it misses the deadline")),
    ]


def test_the_rent_line_says_how_old_the_committed_price_is():
    import datetime as dt
    from dataclasses import replace

    report = decided_report(figures=False)
    undated = replace(report, written=dt.date(2026, 10, 1))
    assert dict(card.lines(undated))["Rent"].endswith("8 h billed (min 1 h, per 1 h), at 0.50 USD per lot-hour; an undated "
                                                      "example price, not a quote")
    plan = report.choice.chosen[0].plan
    dated = replace(plan, offer=replace(plan.offer, as_of=dt.date(2026, 9, 24)))
    assert card.price_age(dated, dt.date(2026, 10, 1)) == "; an example price as of 2026-09-24 (7 days), not a quote"
    quoted = replace(dated, offer=replace(dated.offer, source="provider's list"))
    assert card.price_age(quoted, dt.date(2026, 10, 1)) == "; price as of 2026-09-24 (7 days)"
    assert card.price_age(replace(plan, offer=replace(quoted.offer, as_of=None)), dt.date(2026, 10, 1)) == "; undated price"


def test_a_tie_names_one_configuration_to_run_and_never_a_step_that_cannot_change_the_cost():
    # batch64-bf16-lg (slowest 6.0 s) and batch8-lg (slowest 8.0 s) tie at 4.00 USD: run the shortest slowest-pass
    # forecast; the card's figures are its own, and more passes to split them would not change the 4.00 USD.
    report = decided_report(changed=TIED, figures=False)
    lines = dict(card.lines(report))
    assert [a.configuration.variant for a in report.choice.chosen] == ["batch64-bf16-lengthgrouped",
                                                                       "batch8-lengthgrouped"]
    assert lines["Run"].startswith("batch64-bf16-lg, the shortest slowest-pass forecast of 2 tied at 4.00 USD (then "
                                   "the most spare capacity, then the name); batch8-lg equal in cost, their durations "
                                   f"do not separate on {CPU} (no cost per result yet")
    assert lines["Runner-up"] == "batch8 at 5.50 USD (1.50 USD more, +37.5 %)"
    assert "would separate" not in lines["Would change it"] and "passes per configuration" not in lines[
        "Would change it"]


def test_an_undecided_card_still_says_what_to_rent_what_to_run_what_is_in_doubt_and_how_to_settle_it():
    # batch64-bf16-lg (median 5.8 s, slowest 6.0) at 4.00 and batch8-lg (5.8 s, slowest 8.0) at 4.50 USD: the plan
    # that covers the slowest pass of both is batch8-lg's 9 h, 4.50 USD; 0.50 USD depends on which is faster.
    lines = card.lines(decided_report(changed=NOISE_PRICED, figures=False))
    assert lines == [
        ("No decision", ("undecided between batch64-bf16-lg at 4.00 USD, batch8-lg at 4.50 USD: their durations do "
                         "not separate, yet their slowest-pass plans differ in price (PROTOCOL.md §6)")),
        ("Rent", ("4.50 USD committed for cpu hourly, 1 lot, 9 h billed (min 1 h, per 1 h): it covers the slowest pass "
                  "of every undecided configuration; an example price, not a quote")),
        ("Run", "batch64-bf16-lg, the fastest median (5.600 s), or any of them: the plan covers each"),
        ("In doubt", ("0.50 USD: the rent beyond the cheapest of their own plans (batch64-bf16-lg at 4.00 USD), while "
                      "it is not known which is really faster")),
        ("Settle", "about 9 passes per configuration would separate batch64-bf16-lg from batch8-lg"),
    ]


def test_every_standing_in_the_table_the_figures_and_the_runs_is_one_of_the_defined_words():
    from gpucost_mlflow.report import standing

    for changed in (None, TIED, NOISE_PRICED):
        report = decided_report(changed=changed)
        table = sections.decision_table(report)
        words = {row[1].split(" [")[0].split(":")[0].split(" (")[0] for row in table.rows}
        assert words <= set(standing.WORDS), words - set(standing.WORDS)
        drawn = [report.figures["cost_volume"].alt, report.figures["durations"].alt]
        for alt in drawn:
            found = {part.split("(")[-1] for part in alt.replace(")", "(").split("(") if part}
            assert not {"runner-up", "other timely", "rejected", "late", "no decision"} & found
        assert "no decision" not in " ".join(row[1] for row in table.rows)
        committed = [row[5] for row in table.rows]
        prices = [float(c.split()[0]) for c in committed if c[:1].isdigit()]
        assert prices == sorted(prices)  # the first table is sorted by committed cost
    undecided = decided_report(changed=NOISE_PRICED)
    stands = {row[0]: row[1] for row in sections.decision_table(undecided).rows}
    assert stands[f"batch8 on {CPU}"] == "costs more"  # feasible, priced, timely: never "no decision" nor "left out"


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
                        "cost per validated corpus: no cost per result yet: no deliverable accepted.")
    assert "cost per validated corpus" not in table.head and "deadline" in table.head  # batch1 misses it
    assert [row[0] for row in table.rows][:3] == ["batch64-bf16-lg", "batch8-lg", "batch8"]
    assert "5 rejected attempt(s) (a check failed)" in table.notes  # batch8-int8's standing
    assert "not committed: 5 rejected attempt(s) (a check failed)" in table.notes  # in place of its price
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


def test_every_figure_is_written_as_png_next_to_report_html_and_returned_for_the_decision_run(tmp_path):
    report = decided_report()
    paths = build.write(report, pd.DataFrame(), tmp_path)
    assert sorted(paths) == ["attempts.csv", "balance.csv", "cost-volume.png", "durations.png", "memory.png",
                             "report.html", "report.md"]
    for name in ("cost-volume.png", "durations.png", "memory.png"):
        assert paths[name].read_bytes().startswith(b"\x89PNG") and paths[name].parent == paths["report.html"].parent
    assert report.figures["cost_volume"].alt.startswith("Committed cost against volume (USD")
    assert report.figures["cost_volume"].alt.endswith("for batch64-bf16-lg (chosen), batch8-lg (costs more); declared "
                                                      "volume 2,000; no break-even in range")
    page = paths["report.html"].read_text()
    assert page.index('alt="Committed cost against volume') < page.index('id="decision"') < page.index('id="durations"')
    assert "![Committed cost against volume" in paths["report.md"].read_text()
    assert "Committed cost per configuration" not in page and not hasattr(plots, "cost")  # the bar chart went


def test_an_undecided_decision_run_logs_each_candidates_cost_and_hours_and_the_money_in_doubt():
    from gpucost_mlflow.core.money.choice import doubt
    from gpucost_mlflow.report import decided

    report = decided_report(changed=NOISE_PRICED, figures=False)
    named = short.names([a.configuration for a in report.assessments]).of
    group = report.choice.undecided
    found = decided.candidate_figures({named(a.configuration): a for a in group}, doubt(group).in_doubt)
    assert {key: value for key, value in found.items() if not key.startswith("forecast")} == {
        "candidates": 2.0, "committed_cost_usd/batch64-bf16-lg": 4.0, "committed_cost_usd/batch8-lg": 4.5,
        "in_doubt_usd": 0.5}
    assert sorted(key for key in found if key.startswith("forecast")) == [
        "forecast_slowest_h/batch64-bf16-lg", "forecast_slowest_h/batch8-lg"]
    assert decided.candidate_figures({}) == {"candidates": 0.0}  # nothing priced: still says what it decided


def test_a_table_whose_measured_cells_are_all_empty_is_one_line_with_its_reason():
    from gpucost_mlflow.report.cells import Table, empty

    table = Table("energy", ["device", "variant", "energy (J)", "net (J)"], keys=2)
    for variant in ("batch1", "batch8"):
        table.rows.append(["cpu", variant, empty(table, "no energy counter on this CPU"), empty(table, "no cooldown_s")])
    line = "energy (J), net (J): empty for all 2 configurations: no energy counter on this CPU; no cooldown_s."
    assert formats.md_table(table) == line and line in formats.html_table(table)
    table.rows[0][2] = "12.0"
    assert formats.md_table(table).startswith("| device |")


def test_a_shortened_line_is_cut_between_words_or_path_parts_never_inside_one():
    from gpucost_mlflow.tracking.descriptions import short

    said = short("energy counter unavailable: /sys/class/powercap/intel-rapl:0/energy_uj not readable by this "
                 "user (permission denied)", 60)
    assert said == "energy counter unavailable: /sys … (permission denied)" and len(said) <= 60


def test_a_planned_start_before_the_report_is_said_to_be_past():
    import dataclasses
    import datetime as dt

    # Read at 14:00 on the start day, five hours after the declared 09:00 start: one end, from now (7.6 h at the
    # slowest pass: by 21:33), never the past one; the deadline's standing from the declared start as pre-registered
    # and from now, and so is the volume that fits.
    read = dt.datetime(2026, 10, 1, 14, 0, tzinfo=dt.timezone.utc)
    report = dataclasses.replace(decided_report(figures=False), written=read.date(), read_at=read)
    lines = dict(card.lines(report))
    assert "ends by 2026-10-01T21:33 if started now (the declared start is past); deadline 2026-10-02T05:00 (met " \
        "from the declared start 2026-10-01T09:00, met started now)" in lines["Window"]
    assert "16:33" not in lines["Window"]  # the end from the declared start, now past, is not said
    assert lines["Would change it"].endswith("above 9,340 corpora it misses the deadline from the declared start; "
                                             "started now, above 6,389")
    assert "(past: this report was read at 2026-10-01T14:00:00+00:00; the window still runs from the declared start" \
        in sections.plan_text(report)
    early = dataclasses.replace(report, read_at=dt.datetime(2026, 10, 1, 8, 0, tzinfo=dt.timezone.utc))
    assert "past" not in dict(card.lines(early))["Window"]


def test_the_cards_colour_follows_its_state_decided_tied_undecided_or_none():
    for report, state in ((decided_report(figures=False), "decided"),
                          (decided_report(changed=TIED, figures=False), "tied"),
                          (decided_report(changed=NOISE_PRICED, figures=False), "undecided"),
                          (decided_report(priced_device="NVIDIA B200", figures=False), "none")):
        assert card.state(report) == state
        assert f'<ul class="decision {state}" id="card">' in render._card_html(report)
    assert ".decision.undecided{background:#fff3cd" in formats.STYLE  # the amber the warnings use, never success green


def test_the_window_says_how_long_the_rate_was_seen_to_hold_against_the_hours_committed():
    """The method's caveat (PROTOCOL.md): short passes do not show long-run stability; the card puts the confirmation's
    seconds beside the forecast window's hours, or, before any confirmation, one pass's clock."""
    import dataclasses

    from gpucost_mlflow.core.measurement.confirmation import CONFIRMED, Confirmation, RunOutcome

    report = decided_report(figures=False)
    chosen = report.choice.chosen[0]
    run = RunOutcome("r1", CONFIRMED, "687.6 inputs/s", 687.6, 31.2)
    confirmed = dataclasses.replace(report, decided=dataclasses.replace(report.decided, confirmations={
        chosen.configuration.name: Confirmation(CONFIRMED, "687.6 inputs/s", "r1", (run,))}))
    assert dict(card.lines(confirmed))["Window"].endswith(
        "; the confirmation timed 31 s of the 7.6 h window: short runs do not show that a rate holds for hours "
        "(PROTOCOL.md)")
    chosen.configuration.measured_s = (3.1, 3.4)
    assert dict(card.lines(report))["Window"].endswith("; no pass timed more than 3.4 s of the 7.6 h window: short "
                                                       "runs do not show that a rate holds for hours (PROTOCOL.md)")
