"""The report's stale state (issue 25, item 6): pending passes re-judged first, a protocol other than the locked one
refused or reported as a what-if (PROTOCOL §1, §7)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.protocol_diff import Difference, against_lock, changed_fields, describe
from gpucost_mlflow.core.judging.judge import pending_reason
from gpucost_mlflow.tracking import schema, search
from tests.helpers import CATALOG, LABELS, SHIPPED_PROTOCOL, VARIANTS
from tests.scenario import B200, EXPERIMENT

pytestmark = pytest.mark.unit

LATER_DEADLINE = 'deadline: "2026-12-24T09:00:00+01:00"'
REVISION = {schema.MODEL_REVISION: "r1"}


def edited(tmp_path: Path, name: str = "edited.yaml") -> Path:
    """The shipped protocol with a later deadline: another digest, one changed field."""
    path = tmp_path / name
    path.write_text(SHIPPED_PROTOCOL.read_text().replace('deadline: "2026-12-04T09:00:00+01:00"', LATER_DEADLINE))
    assert path.read_text() != SHIPPED_PROTOCOL.read_text()
    return path


def run_report(tmp_path: Path, *protocol_args: str):
    """`gpucost report` on the scenario experiment with the repository's catalog and variants, into tmp_path/out."""
    return CliRunner().invoke(main, ["report", "--experiment", EXPERIMENT, "--out", str(tmp_path / "out"),
                                     "--catalog", str(CATALOG), "--variants-file", str(VARIANTS), *protocol_args])


def decision_runs() -> list:
    experiment_id = mlflow.get_experiment_by_name(EXPERIMENT).experiment_id
    return MlflowClient().search_runs([experiment_id], filter_string=f"tags.`{schema.ROLE}` = '{schema.DECISION_ROLE}'")


def five_batch8(experiment) -> list[str]:
    return [experiment("batch8", B200, seconds) for seconds in (10.0, 10.1, 10.2, 10.1, 10.0)]


def with_predictions(run_id: str, folder: Path, manifest: bool = False) -> str:
    """Log the run's predictions (every input labelled as by the reference) and, for a pending pass, its manifest: the
    shipped protocol's 1,000 inputs, enough to show its 0.97 label agreement (30 could not: issue 51)."""
    client = MlflowClient()
    target = folder / run_id
    target.mkdir(parents=True)
    with gzip.open(target / "predictions.jsonl.gz", "wt", encoding="utf-8") as handle:
        for index in range(1000):
            handle.write(json.dumps({"id": f"t{index}", "label": LABELS[index % 3], "score": 0.9}) + "\n")
    client.log_artifact(run_id, str(target / "predictions.jsonl.gz"))
    if manifest:
        (target / "manifest.json").write_text(json.dumps({"model": {"labels": LABELS}}))
        client.log_artifact(run_id, str(target / "manifest.json"))
    client.log_metric(run_id, "macro_f1", 0.85)
    return run_id


def pending_then_reference(experiment, folder: Path, pending: int = 1) -> tuple[list[str], list[str]]:
    """bf16 passes pending their reference, then five accepted batch8 passes recorded by standalone passes."""
    waiting = [with_predictions(experiment("batch8-bf16", B200, 6.0, status="pending", quality="pending reference",
                                           reason=pending_reason("batch8"), params=REVISION), folder, manifest=True)
               for _ in range(pending)]
    references = [with_predictions(experiment("batch8", B200, seconds, params=REVISION), folder)
                  for seconds in (10.0, 10.1, 10.2, 10.1, 10.0)]
    return waiting, references


def test_protocol_fields_that_differ_are_named_changed_added_or_removed():
    locked = "deadline: '2026-12-04'\nplan: {start: a, setup_hours: 4}\nlabels: [x, y]\nold: 1\n"
    text = "# a comment\ndeadline: '2026-12-24'\nplan: {start: b, setup_hours: 4}\nlabels: [x, y, z]\nnew: 2\n"
    assert changed_fields(locked, text) == [Difference("deadline", "changed"), Difference("plan.start", "changed"),
                                            Difference("old", "removed"), Difference("labels[3]", "added"),
                                            Difference("new", "added")]
    assert describe(changed_fields(locked, text)) == "changed deadline, plan.start; added labels[3], new; removed old"
    assert describe(changed_fields(locked, "# only a comment\n" + locked)) == "no field differs (comments or layout only)"


def test_the_locked_protocol_or_none_locked_reports_as_usual_and_another_is_refused_or_labelled():
    text = SHIPPED_PROTOCOL.read_text()
    assert against_lock(SHIPPED_PROTOCOL, "d1", text, "x", "d1", text, what_if=False) == ""
    assert against_lock(SHIPPED_PROTOCOL, "d2", text, "x", "", "", what_if=False) == ""
    other = text.replace("passes_per_variant: 5", "passes_per_variant: 3")
    assert against_lock(SHIPPED_PROTOCOL, "d2", other, "x", "d1", text, what_if=True) == "changed passes_per_variant"
    with pytest.raises(GpucostError, match=r"protocol.yaml differs from the protocol locked on experiment 'x' \(d1\): "
                                           r"changed passes_per_variant; report under the locked protocol"):
        against_lock(SHIPPED_PROTOCOL, "d2", other, "x", "d1", text, what_if=False)
    assert "text is not stored" in against_lock(SHIPPED_PROTOCOL, "d2", other, "x", "d1", "", what_if=True)


def test_a_report_under_an_edited_protocol_is_refused_in_one_line_naming_the_field(experiment, tmp_path):
    five_batch8(experiment)
    result = run_report(tmp_path, "--protocol", str(edited(tmp_path)))
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [result.output.strip()]
    assert result.output.startswith("Error: edited.yaml differs from the protocol locked on experiment 'scenario' (")
    assert "changed deadline; report under the locked protocol, or pass --what-if-protocol FILE" in result.output
    assert decision_runs() == [] and not (tmp_path / "out").exists()


def test_a_what_if_protocol_is_reported_titled_and_named_so_with_both_digests(experiment, tmp_path):
    five_batch8(experiment)
    what_if = edited(tmp_path)
    result = run_report(tmp_path, "--what-if-protocol", str(what_if))
    assert result.exit_code == 0, result.output
    assert "What-if protocol (changed deadline): Decision: batch8 on NVIDIA B200" in result.stdout
    assert "protocol changed after results" not in result.output  # the what-if labelling supersedes the warning
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert markdown.startswith("# What-if protocol: decision report: scenario\n")
    assert "**Decision note.** What-if protocol (changed deadline): Decision:" in markdown
    locked = mlflow.get_experiment_by_name(EXPERIMENT).tags[schema.PROTOCOL_DIGEST]
    digest = load_protocol(what_if).digest
    assert (f"Protocol digest `{digest[:16]}`: what-if protocol edited.yaml (changed deadline), not the protocol "
            f"locked on the experiment (`{locked[:16]}`)") in markdown
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h1>What-if protocol: decision report: scenario</h1>" in page and f"<code>{digest[:16]}</code>" in page
    (run,) = decision_runs()
    assert run.info.run_name == "batch8 · chosen · not yet confirmed · what-if protocol"
    assert run.data.tags[schema.PROTOCOL_DIGEST] == digest
    note = run.data.tags[schema.NOTE]
    assert note.startswith("### What-if protocol: decision: batch8 on NVIDIA B200")
    assert f"not the protocol locked on the experiment (`{locked[:12]}`)" in note


def test_a_what_if_protocol_equal_to_the_locked_one_changes_nothing(experiment, tmp_path):
    five_batch8(experiment)
    result = run_report(tmp_path, "--what-if-protocol", str(SHIPPED_PROTOCOL))
    assert result.exit_code == 0, result.output
    assert "What-if" not in (tmp_path / "out" / "report.md").read_text()
    assert not decision_runs()[0].info.run_name.startswith("what-if")


@pytest.mark.parametrize("content, message", [
    (None, "protocol file not found"),
    ("deadline: [unclosed\n", "not valid YAML"),
])
def test_a_missing_or_invalid_what_if_protocol_is_one_line_exit_2_and_nothing_recorded(experiment, tmp_path,
                                                                                       content, message):
    waiting, _ = pending_then_reference(experiment, tmp_path / "artifacts")
    path = tmp_path / "what-if.yaml"
    if content is not None:
        path.write_text(content)
    result = run_report(tmp_path, "--what-if-protocol", str(path))
    assert result.exit_code == 2 and result.output.startswith("Error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert decision_runs() == [] and not (tmp_path / "out").exists()
    assert MlflowClient().get_run(waiting[0]).data.tags[schema.STATUS] == "pending"


def test_protocol_and_what_if_protocol_together_are_refused(experiment, tmp_path):
    result = run_report(tmp_path, "--protocol", str(SHIPPED_PROTOCOL), "--what-if-protocol", str(edited(tmp_path)))
    assert result.exit_code == 2 and "pass --protocol or --what-if-protocol, not both" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("protocol_args", [["--protocol"], ["--what-if-protocol"]], ids=["locked", "what-if"])
def test_a_pending_pass_whose_reference_a_standalone_pass_recorded_is_judged_by_the_report_which_says_so(
        experiment, tmp_path, protocol_args):
    (waiting,), references = pending_then_reference(experiment, tmp_path / "artifacts")
    protocol = SHIPPED_PROTOCOL if protocol_args == ["--protocol"] else edited(tmp_path)
    result = run_report(tmp_path, *protocol_args, str(protocol))
    assert result.exit_code == 0, result.output
    line = f"batch8-bf16 run {waiting}: pending -> accepted against reference run {references[-1]} (every check passed)"
    assert line in result.stdout
    assert "report: re-judged 1 pending pass(es) first" in result.stdout
    run = MlflowClient().get_run(waiting)
    assert run.data.tags[schema.STATUS] == "accepted" and "(first pending)" in run.data.tags[schema.REJUDGED]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert f"**Re-judged first.** 1 pending pass(es) whose reference now exists were judged and recorded on their " \
           f"runs before this report: {line}." in markdown
    assert "Re-judged first." in (tmp_path / "out" / "report.html").read_text()
    again = run_report(tmp_path, *protocol_args, str(protocol))
    assert again.exit_code == 0 and "re-judged" not in again.stdout
    assert "Re-judged first" not in (tmp_path / "out" / "report.md").read_text()


def test_rejudge_reads_every_page_of_pending_passes(experiment, tmp_path, monkeypatch):
    waiting, _ = pending_then_reference(experiment, tmp_path / "artifacts", pending=5)
    monkeypatch.setattr(search, "SEARCH_MAX_RESULTS_DEFAULT", 2)
    pages = []
    original = MlflowClient.search_runs

    def paged(self, *args, **kwargs):
        if "'pending'" in kwargs.get("filter_string", ""):
            pages.append(kwargs["max_results"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "search_runs", paged)
    result = CliRunner().invoke(main, ["rejudge", "--experiment", EXPERIMENT, "--protocol", str(SHIPPED_PROTOCOL)])
    assert result.exit_code == 0, result.output
    assert pages == [2, 2, 2]  # every page read, all before the first verdict is recorded
    assert "5 pending pass(es) judged" in result.output
    assert {MlflowClient().get_run(run_id).data.tags[schema.STATUS] for run_id in waiting} == {"accepted"}


KEPT = SHIPPED_PROTOCOL.with_name("protocol-2026-12-04.yaml")  # the default as shipped before issue 61


def test_an_experiment_locked_to_the_default_before_it_changed_is_reported_under_its_kept_file_and_says_so(
        experiment, tmp_path):
    from tests.scenario import lock_to

    lock_to(KEPT)
    five_batch8(experiment)
    result = run_report(tmp_path)  # the default --protocol: projects/protocol.yaml, changed since the lock
    assert result.exit_code == 0, result.output
    assert ("protocol: experiment 'scenario' is locked to " in result.stderr
            and "protocol-2026-12-04.yaml, the default protocol as shipped before it changed" in result.stderr)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert f"Protocol digest `{load_protocol(KEPT).digest[:16]}` (" in markdown and "protocol-2026-12-04.yaml)" in markdown
    edited_too = run_report(tmp_path, "--protocol", str(SHIPPED_PROTOCOL))  # named: compared, never swapped
    assert edited_too.exit_code == 2 and "differs from the protocol locked on experiment 'scenario'" in edited_too.output


def test_a_pass_under_the_new_default_into_an_experiment_locked_to_the_old_names_the_file_it_is_locked_to(store):
    from gpucost_mlflow.tracking import experiments

    client = MlflowClient()
    experiment_id = experiments.resolve(client, "old", create=True).id
    experiments.lock(client, experiment_id, "old", load_protocol(KEPT), KEPT.read_text())
    with pytest.raises(GpucostError, match=r"a new protocol means a new experiment \(use another --experiment, or "
                                           r"--protocol \S+protocol-2026-12-04.yaml \(-P protocol=...\), the file it is "
                                           r"locked to\)"):
        experiments.lock(client, experiment_id, "old", load_protocol(SHIPPED_PROTOCOL), SHIPPED_PROTOCOL.read_text())
