"""The attempts table's notes point at the file each pass really exported (PROTOCOL.md §5: `notes` with the output path)."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.reader import attempt_row
from gpucost_mlflow.tracking.run_records import RunRecord

pytestmark = pytest.mark.unit


def record(workload: str, exported: str | None) -> RunRecord:
    tags = {schema.VARIANT: "v", schema.STATUS: "accepted", schema.STATUS_REASON: "every check passed"}
    if exported:
        tags[schema.EXPORTED] = exported
    return RunRecord("r1", "FINISHED", 1_000, 2_000, "file:///store/r1/artifacts", tags,
                     {f"{schema.SETTING_PREFIX}workload": workload}, {"pass_s": 1.0})


@pytest.mark.parametrize("workload, output", [("classification", "labels"), ("embeddings", "embeddings"),
                                              ("generation", "generations"), ("python:my.py", "embeddings")])
def test_the_note_names_the_file_the_pass_exported(workload, output):
    notes = attempt_row(record(workload, registry.output(output).FILE))["notes"]
    assert f"predictions: file:///store/r1/artifacts/{registry.output(output).FILE}" in notes


def test_a_generation_pass_recorded_before_the_tag_points_at_its_generations_never_predictions():
    notes = attempt_row(record("generation", None))["notes"]
    assert "artifacts/generations.jsonl.gz" in notes and "predictions.jsonl.gz" not in notes
