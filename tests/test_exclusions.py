"""`gpucost exclude` (PROTOCOL.md §6): an excluded pass keeps its row and its cause, leaves the durations, and undo restores it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from mlflow.entities import RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.report import render
from gpucost_mlflow.report.configurations import configurations
from gpucost_mlflow.report.measured import ReportAttempts
from gpucost_mlflow.tracking import schema, writer
from gpucost_mlflow.tracking.exclusion_record import Exclusion, details
from tests.helpers import attempts_table, evidence_of
from tests.scenario import B200
from tests.scenario import report as built_report

pytestmark = pytest.mark.unit

CAUSE = "host maintenance event 2026-11-30 10:12 UTC (provider ticket 4411)"


@pytest.fixture
def attempt(experiment):
    """The report tests' writer of attempts (through writer.py), on one B200, returning each attempt's run id."""

    def write(variant, pass_s, status="accepted", reason="every check passed", **more) -> str:
        return experiment(variant, B200, pass_s, status=status, reason=reason, **more)

    return write


def exclude(*args):
    return CliRunner().invoke(main, ["exclude", *args])


def row(run_id):
    table = attempts_table("scenario")
    return table.set_index("run_id").loc[run_id]


def report():
    return built_report()[0]


def test_an_excluded_pass_keeps_its_row_with_its_cause_and_leaves_the_durations(attempt):
    for seconds in (10.1, 10.3, 10.2, 10.0):
        attempt("batch8", seconds)
    slow = attempt("batch8", 31.0)

    result = exclude(slow, "--reason", "operator", "--note", f"  {CAUSE}\n")
    assert result.exit_code == 0, result.output
    assert f"accepted -> excluded for operator: {CAUSE}" in result.output
    assert "exclusion rule of the protocol" in result.output and "documented external cause" in result.output

    table = attempts_table("scenario")
    assert len(table) == 5  # the row stays
    excluded = row(slow)
    assert excluded["status"] == "excluded"
    assert excluded["reason"].startswith(f"operator: {CAUSE} (excluded by ") and " at 20" in excluded["reason"]
    assert "before exclusion: accepted (every check passed)" in excluded["notes"]
    assert excluded["pass_s"] == 31.0  # raw measurement untouched
    recorded = details(MlflowClient().get_run(slow).data.tags)  # one tag: gpucost.exclusion
    assert (recorded["reason"], recorded["note"]) == ("operator", CAUSE)
    assert recorded["cause"] == f"operator: {CAUSE}" and recorded["by"] and recorded["at"].endswith("+00:00")

    (config,) = configurations(ReportAttempts.of(evidence_of("scenario").attempts))
    assert config.durations.values == (10.1, 10.3, 10.2, 10.0)
    assert config.durations.median == pytest.approx(10.15)
    assert config.counts["excluded"] == 1 and config.counts["accepted"] == 4
    assert len(config.attempt_spans) == 5  # the rental it held still counts in the forecast
    (summary,) = report().summaries
    assert 31.0 not in summary.configuration.durations.values


def test_undo_restores_the_status_and_reason_it_had(attempt):
    attempt("batch8", 10.0)
    pending = attempt("batch8-bf16", 9.0, status="pending", reason="pending reference: no accepted batch8 pass yet")
    client = MlflowClient()
    before = row(pending)

    assert exclude(pending, "--reason", "operator", "--note", CAUSE).exit_code == 0
    assert row(pending)["status"] == "excluded"
    assert "before exclusion: pending (pending reference: no accepted batch8 pass yet)" in row(pending)["notes"]

    again = exclude(pending, "--reason", "contended")
    assert again.exit_code == 2 and "already excluded" in again.output

    result = exclude(pending, "--undo")
    assert result.exit_code == 0, result.output
    assert "excluded -> pending (pending reference: no accepted batch8 pass yet)" in result.output
    after = row(pending)
    assert (after["status"], after["reason"], after["notes"]) == (before["status"], before["reason"], before["notes"])
    tags = client.get_run(pending).data.tags
    assert tags[schema.STATUS] == "pending" and not details(tags)["cause"]
    assert f"(cause was: operator: {CAUSE})" in details(tags)["undone"]

    twice = exclude(pending, "--undo")
    assert twice.exit_code == 2 and "not excluded" in twice.output
    assert exclude(pending, "--reason", "throttled", "--note", "a second, documented cause").exit_code == 0
    assert row(pending)["reason"].startswith("throttled: a second, documented cause (excluded by ")


def test_a_failed_pass_excluded_before_the_rule_can_still_be_restored(attempt):
    failed = attempt("batch8", None, status="failed", reason="out of memory (CUDA OOM at batch 12)")
    client = MlflowClient()
    before = row(failed)
    client.log_batch(failed, tags=[RunTag(key, value) for key, value in {
        schema.STATUS: "excluded", schema.STATUS_REASON: CAUSE, schema.EXCLUDED_CAUSE: CAUSE,
        schema.EXCLUDED_BY: "someone", schema.EXCLUDED_AT: "2026-11-30T10:15:00+00:00",
        schema.STATUS_BEFORE_EXCLUSION: "failed", schema.REASON_BEFORE_EXCLUSION: before["reason"]}.items()])
    assert "pass_s empty: out of memory" in row(failed)["notes"]  # the measurement's own reason, not the cause

    result = exclude(failed, "--undo")
    assert result.exit_code == 0 and "excluded -> failed (out of memory (CUDA OOM at batch 12))" in result.output
    after = row(failed)
    assert (after["status"], after["reason"], after["notes"]) == (before["status"], before["reason"], before["notes"])


def test_exclude_refuses_a_rejected_pass(attempt):
    for seconds in (10.1, 10.3, 10.2, 10.0):
        attempt("batch8", seconds)
    rejected = attempt("batch8-bf16", 6.0, status="rejected", reason="quality: macro_f1 0.70 < 0.80")
    client = MlflowClient()
    before = client.get_run(rejected).data.tags

    result = exclude(rejected, "--reason", "operator", "--note", "another job on the machine")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [(
        f"Error: run '{rejected}' was rejected (quality: macro_f1 0.70 < 0.80): a quality or failure verdict is a "
        "result, not an external disturbance; exclusion applies to timings, and to failures caused from outside (a "
        "kill by a signal, a contended pass); nothing changed")]
    assert client.get_run(rejected).data.tags == before
    assert row(rejected)["status"] == "rejected"


@pytest.mark.parametrize("reason", ["out of memory (CUDA OOM at batch 12)",
                                    "interrupted (launcher stopped before the attempt was recorded)"])
def test_exclude_refuses_a_failed_pass(attempt, reason):
    failed = attempt("batch8", None, status="failed", reason=reason)
    client = MlflowClient()
    before = client.get_run(failed).data.tags

    result = exclude(failed, "--reason", "operator", "--note", CAUSE)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: run '{failed}' failed ({reason}): ")
    assert "exclusion applies to timings, and to failures caused from outside" in lines[0]
    assert client.get_run(failed).data.tags == before


@pytest.mark.parametrize("reason, tags", [("killed by signal SIGKILL", None),
                                          ("child exited with code 1 without an outcome", {schema.CONTENDED: "other "
                                           "processes took 61 % of the CPU"})])
def test_a_pass_failed_from_outside_may_be_excluded_and_undone(attempt, reason, tags):
    """Killed by a signal it did not raise, or contended while it ran: the cause may lie outside the configuration
    (PROTOCOL.md §6); the user's documented cause decides, as for a timing. An out-of-memory failure never may."""
    failed = attempt("batch8", None, status="failed", reason=reason, tags_extra=tags)
    result = exclude(failed, "--reason", "operator", "--note", CAUSE)
    assert result.exit_code == 0, result.output
    assert "failed -> excluded" in result.output and row(failed)["status"] == "excluded"
    undone = exclude(failed, "--undo")
    assert undone.exit_code == 0 and row(failed)["status"] == "failed"


def test_exclude_refuses_a_pass_left_running_whose_heartbeat_stopped(experiment):
    client = MlflowClient()
    experiment_id = client.get_experiment_by_name("scenario").experiment_id
    tags = writer.start_tags(role="benchmark", variant="batch8", basis=writer.Basis(B200, "cuda", "a" * 64, "d" * 64))
    tags.update({schema.HOST: "host-b", schema.LAUNCHER: "host-b:4242", schema.HEARTBEAT: "2025-12-01T10:00:00+00:00"})
    stale = client.create_run(experiment_id, tags=tags, start_time=1_764_583_200_000).info.run_id
    before = client.get_run(stale).data.tags

    result = exclude(stale, "--reason", "operator", "--note", CAUSE)
    assert result.exit_code == 2 and f"run '{stale}' failed (interrupted (no heartbeat since" in result.output
    assert client.get_run(stale).data.tags == before


def test_the_report_lists_every_exclusion_per_variant(attempt):
    runs = {variant: [attempt(variant, 10.0 + i / 10) for i in range(3)] for variant in ("batch4", "batch8")}
    assert "No attempt excluded." in render.markdown(report())

    assert exclude(runs["batch4"][1], "--reason", "operator", "--note", CAUSE).exit_code == 0
    note = "<script>another job on the machine</script>"
    assert exclude(runs["batch8"][2], "--reason", "operator", "--note", note).exit_code == 0
    built = report()
    assert [(v.variant, v.attempts, len(v.excluded)) for v in built.exclusions] == [("batch4", 3, 1), ("batch8", 3, 1)]

    md = render.markdown(built)
    section = md.split("## Exclusions (PROTOCOL.md §6)")[1].split("\n## ")[0]
    assert "- batch4: excluded 1 of 3 attempts" in section and "- batch8: excluded 1 of 3 attempts" in section
    assert CAUSE in section and runs["batch4"][1] in section and runs["batch8"][2] in section
    assert "documented external cause" in section  # the protocol's exclusion_rule
    assert "No attempt excluded." not in md

    page = render.page(built)
    assert "<h2>Exclusions (PROTOCOL.md §6)</h2>" in page
    assert "&lt;script&gt;another job on the machine&lt;/script&gt;" in page and "<script>" not in page
    assert 'id="exclusions"' in page


def test_exclude_of_an_unknown_run_or_without_a_valid_reason_is_one_line_exit_2_and_changes_nothing(attempt):
    target = attempt("batch8", 10.0)
    client = MlflowClient()
    other = client.create_run(client.get_experiment_by_name("scenario").experiment_id).info.run_id  # not a gpucost pass
    before = client.get_run(target).data.tags

    operator = [target, "--reason", "operator", "--note"]
    for args in ([target], [target, "--reason", ""], [target, "--reason", "maintenance"], [target, "--cause", ""],
                 [target, "--reason", "operator"], [*operator, "  \n "], [*operator, "x" * 5000],
                 [target, "--cause", CAUSE, "--reason", "contended"],
                 ["0" * 32, "--reason", "contended"], [other, "--reason", "operator", "--note", CAUSE],
                 [target, "--undo"], [target, "--undo", "--reason", "contended"], [target, "--undo", "--note", CAUSE]):
        result = exclude(*args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (args, result.output)
    assert client.get_run(target).data.tags == before
    assert schema.STATUS not in client.get_run(other).data.tags
    assert row(target)["status"] == "accepted"


def test_the_reason_comes_from_the_fixed_list_and_operator_needs_its_note(attempt):
    target = attempt("batch8", 10.0)
    client = MlflowClient()
    before = client.get_run(target).data.tags

    unknown = exclude(target, "--reason", "maintenance", "--note", CAUSE)
    assert unknown.exit_code == 2 and unknown.output.strip().splitlines() == [(
        "Error: unknown exclusion reason 'maintenance': one of contended, throttled, starved, cold_shapes, operator; "
        "nothing changed")]
    bare = exclude(target, "--reason", "operator")
    assert bare.exit_code == 2 and len(bare.output.strip().splitlines()) == 1
    assert "--reason operator needs its documented cause as --note TEXT" in bare.output
    assert client.get_run(target).data.tags == before

    flagged = exclude(target, "--reason", "starved")  # a flag's own figures are on the pass: a note is optional
    assert flagged.exit_code == 0, flagged.output
    assert "accepted -> excluded for starved (by " in flagged.output
    assert (details(client.get_run(target).data.tags)["reason"], row(target)["status"]) == ("starved", "excluded")


def test_the_deprecated_cause_option_records_an_operator_reason(attempt):
    target = attempt("batch8", 10.0)
    result = exclude(target, "--cause", CAUSE)
    assert result.exit_code == 0, result.output
    assert "--cause is deprecated" in result.output and f"excluded for operator: {CAUSE}" in result.output
    recorded = details(MlflowClient().get_run(target).data.tags)
    assert (recorded["reason"], recorded["note"]) == ("operator", CAUSE)


@pytest.mark.parametrize("layout", ["one tag", "six tags"])
def test_a_pass_excluded_with_a_free_text_cause_before_the_list_still_reads(attempt, layout):
    """Stores written before the reasons: the free-text cause reads as reason `operator` with the cause as its note,
    in the attempts table, the evidence and the report, and --undo restores it."""
    kept, old = attempt("batch4", 10.0), attempt("batch8", 10.2)
    client = MlflowClient()
    fields = {"cause": CAUSE, "by": "someone", "at": "2026-11-30T10:15:00+00:00", "status_before": "accepted",
              "reason_before": "every check passed"}
    tags = ({schema.EXCLUSION: json.dumps(fields)} if layout == "one tag" else {
        schema.EXCLUDED_CAUSE: CAUSE, schema.EXCLUDED_BY: "someone", schema.EXCLUDED_AT: fields["at"],
        schema.STATUS_BEFORE_EXCLUSION: "accepted", schema.REASON_BEFORE_EXCLUSION: "every check passed"})
    client.log_batch(old, tags=[RunTag(key, value) for key, value in
                                {schema.STATUS: "excluded", schema.STATUS_REASON: CAUSE, **tags}.items()])

    assert details(client.get_run(old).data.tags) == Exclusion(**fields, reason="operator", note=CAUSE)
    assert row(old)["status"] == "excluded" and row(old)["reason"].startswith(f"{CAUSE} (excluded by someone at ")
    read = evidence_of("scenario").exclusions[old]
    assert (read.cause, read.by, read.at, read.reason, read.run_id) == (CAUSE, "someone", fields["at"], "operator", old)
    built = report()
    assert [(v.variant, len(v.excluded)) for v in built.exclusions] == [("batch4", 0), ("batch8", 1)]
    assert not any("not applied alike" in w for w in built.warnings)
    assert row(kept)["status"] == "accepted"

    undone = exclude(old, "--undo")
    assert undone.exit_code == 0 and f"(cause was: {CAUSE})" in undone.output and row(old)["status"] == "accepted"


CONTENDED = {schema.CONTENDED: "other processes took 61 % of the CPU (limit 25 %)"}


def test_the_report_warns_when_one_flag_was_excluded_for_one_variant_and_kept_for_another(attempt):
    batch8 = [attempt("batch8", 10.0 + i / 10, tags_extra=CONTENDED if i < 2 else None) for i in range(5)]
    batch4 = [attempt("batch4", 12.0 + i / 10, tags_extra=CONTENDED if i < 1 else None) for i in range(5)]
    for run_id in batch8[:2]:
        assert exclude(run_id, "--reason", "contended").exit_code == 0

    warning = (f"Exclusion rule not applied alike on {B200}: 2 contended passes of batch8 excluded, 1 contended pass "
               "of batch4 kept (PROTOCOL.md §6)")
    built = report()
    assert warning in built.warnings
    assert f"> **Warning:** {warning}" in render.markdown(built)

    assert exclude(batch4[0], "--reason", "contended", "--note", "same rule as batch8").exit_code == 0
    assert not any("not applied alike" in w for w in report().warnings)


def test_passes_excluded_for_another_reason_or_kept_everywhere_raise_no_warning(attempt):
    runs = {v: [attempt(v, 10.0 + i / 10, tags_extra=CONTENDED if i == 0 else None) for i in range(3)]
            for v in ("batch4", "batch8")}
    assert not any("not applied alike" in w for w in report().warnings)  # kept for every variant: alike
    assert exclude(runs["batch8"][0], "--reason", "operator", "--note", CAUSE).exit_code == 0
    assert not any("not applied alike" in w for w in report().warnings)  # not excluded for its flag


def test_a_flagged_pass_no_exclusion_could_set_aside_raises_no_warning(attempt):
    """A rejected pass or one out of memory is a result: kept with its flag, it is no rule applied unevenly."""
    contended = attempt("batch8", 10.0, tags_extra=CONTENDED)
    attempt("batch4", 9.0, status="rejected", reason="quality: macro_f1 0.70 < 0.80", tags_extra=CONTENDED)
    attempt("batch4", None, status="failed", reason="out of memory (CUDA OOM at batch 12)", tags_extra=CONTENDED)
    assert exclude(contended, "--reason", "contended").exit_code == 0
    assert not any("not applied alike" in w for w in report().warnings)
    attempt("batch4", 9.5, tags_extra=CONTENDED)
    assert any("1 contended pass of batch4 kept" in w for w in report().warnings)
