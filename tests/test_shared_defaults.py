"""The defaults a user does not type (issue 30, item 5): the protocol's own corpus file, built by the command a refusal
names when it is missing, and one experiment shared by `gpucost` and `mlflow run projects`."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from tests import scenario
from tests.helpers import ROOT, write_protocol

pytestmark = pytest.mark.unit

GENERATION = ROOT / "projects" / "protocol-generation.yaml"
SLICE = "data/corpus/generation-200.jsonl"
SOURCE = "data/corpus/comparison.jsonl"
SLICE_COMMAND = f"gpucost corpus slice --corpus {SOURCE} --size 200 --out {SLICE}"


def _generation(command: str, *extra: str):
    """`gpucost pass` or `gpucost campaign` of gen-batch8 under the shipped generation protocol, no --corpus."""
    variant = ["--variant"] if command == "pass" else ["--variants"]
    return CliRunner().invoke(main, [command, *variant, "gen-batch8", "--protocol", str(GENERATION), *extra])


def _no_run_recorded() -> bool:
    client = MlflowClient()
    experiments = client.search_experiments()
    return [e.name for e in experiments] == ["Default"] and not client.search_runs([e.experiment_id for e in experiments])


def test_a_pass_under_the_generation_protocol_reads_the_corpus_file_it_names(store, corpus_dir, tmp_path):
    (tmp_path / "data" / "corpus").mkdir(parents=True)
    shutil.copyfile(corpus_dir / "comparison.jsonl", tmp_path / SLICE)  # 30 inputs where the protocol says 200
    result = _generation("pass")
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: {SLICE}: not the protocol's corpus (30 inputs, the protocol says 200")
    assert _no_run_recorded()


@pytest.mark.parametrize("command", ["pass", "campaign"])
def test_a_missing_slice_is_refused_naming_the_command_that_builds_it(store, command):
    result = _generation(command)
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"Error: {SLICE}: the corpus {GENERATION} names is missing; it is a slice of {SOURCE}, missing too: build both "
        f"with `gpucost corpus build --out data/corpus && {SLICE_COMMAND}` (or pass --corpus FILE)\n")
    assert _no_run_recorded()


def test_a_missing_slice_of_a_corpus_that_is_there_names_the_slice_command_alone(store, corpus_dir, tmp_path):
    (tmp_path / "data" / "corpus").mkdir(parents=True)
    shutil.copyfile(corpus_dir / "comparison.jsonl", tmp_path / SOURCE)
    result = _generation("pass")
    assert result.exit_code == 2, result.output
    assert result.output == (f"Error: {SLICE}: the corpus {GENERATION} names is missing; it is a slice of {SOURCE}: "
                             f"build it with `{SLICE_COMMAND}` (or pass --corpus FILE)\n")
    assert _no_run_recorded()


def test_the_default_protocols_missing_corpus_names_gpucost_corpus_build(store):
    result = CliRunner().invoke(main, ["pass", "--variant", "batch8"])
    assert result.exit_code == 2, result.output
    assert len(result.output.splitlines()) == 1
    assert result.output.startswith(f"Error: {SOURCE}: the corpus ")
    assert result.output.endswith("names is missing; build it with `gpucost corpus build --out data/corpus` "
                                  "(or pass --corpus FILE)\n")
    assert _no_run_recorded()


def test_a_missing_corpus_neither_built_nor_sliced_is_named_with_what_to_do(store, tmp_path):
    protocol = write_protocol(tmp_path / "protocol.yaml")  # corpus.file: comparison.jsonl, 30 inputs
    args = ["pass", "--variant", "batch8", "--protocol", str(protocol)]
    built = CliRunner().invoke(main, args)
    assert built.exit_code == 2 and built.output.endswith("build it with `gpucost corpus build --out . --size 30` "
                                                          "(or pass --corpus FILE)\n"), built.output
    protocol.write_text(protocol.read_text().replace("file: comparison.jsonl", "file: mine.jsonl"))
    mine = CliRunner().invoke(main, args)
    assert mine.exit_code == 2
    assert mine.output == f"Error: mine.jsonl: the corpus {protocol} names is missing; write it there (or pass --corpus FILE)\n"
    assert _no_run_recorded()


def test_a_missing_corpus_under_another_root_is_shown_where_it_is_looked_for(store, tmp_path):
    root = tmp_path / "checkout"
    root.mkdir()
    result = _generation("pass", "--root", str(root))
    assert result.exit_code == 2, result.output
    assert (f"`gpucost corpus build --out {root / 'data/corpus'} && gpucost corpus slice --corpus {root / SOURCE} "
            f"--size 200 --out {root / SLICE}`") in result.output


def test_without_experiment_the_commands_share_mlflows_default_experiment(store, monkeypatch):
    monkeypatch.setattr(scenario, "EXPERIMENT", "Default")
    scenario.attempt_writer()("batch8", scenario.B200, 10.0)
    attempts = CliRunner().invoke(main, ["attempts", "--format", "csv"])
    assert attempts.exit_code == 0, attempts.output
    assert "batch8" in attempts.output and "NVIDIA B200" in attempts.output
    locked = CliRunner().invoke(main, ["protocol", "lock"])
    assert locked.exit_code == 0, locked.output
    assert locked.output.startswith("experiment 'Default' already locked")


def test_the_environment_names_the_experiment_as_mlflow_run_reads_it(store, monkeypatch):
    elsewhere = MlflowClient().create_experiment("elsewhere")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", elsewhere)
    by_id = CliRunner().invoke(main, ["protocol", "lock"])
    assert by_id.exit_code == 0 and by_id.output.startswith("experiment 'elsewhere' locked"), by_id.output
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "named")  # the name first, as `mlflow run` reads them
    by_name = CliRunner().invoke(main, ["protocol", "lock"])
    assert by_name.exit_code == 0 and by_name.output.startswith("experiment 'named' locked"), by_name.output
    assert CliRunner().invoke(main, ["protocol", "lock", "--experiment", "typed"]).output.startswith("experiment 'typed'")


def test_an_experiment_id_the_store_lacks_is_one_line_exit_2(store, monkeypatch):
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", "4242")
    result = CliRunner().invoke(main, ["attempts"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: MLFLOW_EXPERIMENT_ID=4242: no such experiment in sqlite:///")
    assert len(result.output.splitlines()) == 1
