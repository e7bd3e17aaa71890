"""The decision report (PROTOCOL §6, §8-11), on stores written through the project's own write path."""

from __future__ import annotations


import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.catalog import load_catalog
from gpucost_mlflow.core.protocol import load_protocol
from gpucost_mlflow.core.variants import load_variants
from gpucost_mlflow.report.build import build
from gpucost_mlflow.tracking import experiments, writer

from conftest import ROOT

PROTOCOL_PATH = ROOT / "projects" / "protocol.yaml"
CATALOG = ROOT / "catalog" / "labkit-2026-09-24.csv"
B200, RTX = "NVIDIA B200", "NVIDIA GeForce RTX 4090"


@pytest.fixture
def experiment(store):
    """An experiment locked to the shipped protocol, and a writer of attempts through writer.py."""
    client = MlflowClient()
    protocol = load_protocol(PROTOCOL_PATH)
    experiment_id, _ = experiments.resolve(client, "scenario", create=True)
    experiments.lock(client, experiment_id, "scenario", protocol, PROTOCOL_PATH.read_text())

    def attempt(variant, device, pass_s, status="accepted", role="benchmark", fingerprint="a" * 64,
                quality="passed", reason="every check passed", run_name=None, note=None):
        tags = writer.start_tags(role=role, variant=variant, device=device, backend="cuda",
                                 corpus_fingerprint=fingerprint, protocol_digest=protocol.digest)
        if note:
            tags["mlflow.note.content"] = note
        run = client.create_run(experiment_id, tags=tags, run_name=run_name)
        metrics = {"load_s": 3.0, "warmup_s": 0.5, "eval_s": 0.1, "export_s": 0.2, "expected_ids": 1000}
        if pass_s is not None:
            metrics.update(pass_s=pass_s, observed_ids=1000, completed_entries=1000)
        else:
            metrics.update(observed_ids=312, completed_entries=312, mem_peak_allocated_bytes=80e9)
        writer.log_outcome(client, run.info.run_id, status=status, reason=reason, metrics=metrics,
                           ids_match=pass_s is not None, quality_verdict=quality if pass_s is not None else "")
        client.set_terminated(run.info.run_id, "FAILED" if status == "failed" else "FINISHED")

    return attempt


def report(catalog=CATALOG):
    built, balance = build("scenario", load_protocol(PROTOCOL_PATH), PROTOCOL_PATH, load_catalog(catalog),
                           load_variants(ROOT / "projects" / "variants.yaml"))
    return built, balance


def test_a_faster_variant_that_fails_quality_is_not_chosen(experiment):
    for seconds in (10.1, 10.3, 10.2, 10.0, 10.4):
        experiment("batch8", B200, seconds)
        experiment("batch8-int8", B200, seconds / 3, status="rejected", quality="failed: quality",
                   reason="quality: macro_f1 0.7 < 0.8")
    built, _ = report()
    assert built.decision.startswith("Decision: batch8 on NVIDIA B200")
    assert "b200 7-day package x 1: 2,071.00 USD" in built.decision
    int8 = next(a for a in built.assessments if a.configuration.variant == "batch8-int8")
    assert not int8.feasible and "rejected" in int8.feasibility


def test_overlapping_spreads_give_undecided(experiment):
    for a, b in [(10.0, 10.2), (10.5, 9.9), (10.1, 10.4), (9.8, 10.0), (10.3, 10.1)]:
        experiment("batch4", B200, a)
        experiment("batch8", B200, b)
    built, _ = report()
    (series, separation), = built.separations
    assert series == "batch on NVIDIA B200" and not separation.decided
    assert separation.verdict.startswith("undecided: the ranges overlap")
    assert "add repetitions under the same protocol" in separation.verdict
    assert built.decision.startswith("No decision: undecided between")


def test_an_out_of_memory_variant_is_infeasible(experiment):
    for seconds in (12.0, 12.2, 12.1, 11.9, 12.3):
        experiment("batch1", RTX, seconds)
        experiment("batch8", RTX, None, status="failed", reason="out of memory: CUDA out of memory")
    built, balance = report()
    batch8 = next(a for a in built.assessments if a.configuration.variant == "batch8")
    assert not batch8.feasible and "5 failed attempt(s)" in batch8.feasibility
    assert built.decision.startswith("Decision: batch1 on NVIDIA GeForce RTX 4090")
    row = balance[balance["variant"] == "batch8"].iloc[0]
    assert row["failed_attempts"] == 5 and pd.isna(row["pass_s_median"])


def test_no_accepted_deliverable_leaves_cost_per_validated_corpus_undefined(experiment):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds)
    _, balance = report()
    assert balance["cost_per_validated_corpus"][0] == "undefined (no accepted deliverable)"
    assert balance["committed_cost"][0] == "110.00"
    experiment("batch8", RTX, 10.0, role="deliverable", fingerprint="d" * 64)
    experiment("batch8", RTX, 10.1, role="deliverable", fingerprint="d" * 64)
    experiment("batch8", RTX, 10.1, role="deliverable", fingerprint="e" * 64, status="rejected", quality="failed: quality")
    _, balance = report()
    assert balance["accepted_deliverables"][0] == 1  # one fingerprint, counted once; the rejected one not at all
    assert balance["cost_per_validated_corpus"][0] == "110.00"


def test_two_priced_devices_give_the_cheaper_covering_package(experiment):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", RTX, seconds * 3)
        experiment("batch8", B200, seconds)
    built, _ = report()
    assert built.decision.startswith("Decision: batch8 on NVIDIA GeForce RTX 4090, rtx-4090 7-day package x 1: 110.00 USD")
    assert "next: batch8 on NVIDIA B200 at 2,071.00 USD" in built.decision


def test_an_unpriced_device_is_never_priced_as_another(experiment):
    for seconds in (7.5, 7.6, 7.7, 7.4, 7.8):
        experiment("batch1", "AMD EPYC", seconds)
    built, _ = report()
    assert built.decision.startswith("No decision: nothing priced (not priced: AMD EPYC has no package in 2026-09-24")


def test_report_command_writes_four_files_and_logs_a_decision_run(experiment, tmp_path):
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", B200, seconds)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", "--experiment", "scenario", "--out", str(out), "--catalog", str(CATALOG),
                                       "--protocol", str(PROTOCOL_PATH), "--variants-file", str(ROOT / "projects" / "variants.yaml")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["attempts.csv", "balance.csv", "report.html", "report.md"]
    assert f"report: {(out / 'report.html').resolve()}" in result.output
    html = (out / "report.html").read_text()
    assert '<table id="attempts">' in html and "data:image/png;base64," in html and "no p95" in html
    assert len(pd.read_csv(out / "attempts.csv")) == 5
    client = MlflowClient()
    runs = client.search_runs([mlflow.get_experiment_by_name("scenario").experiment_id], filter_string="tags.`gpucost.role` = 'decision'")
    assert len(runs) == 1
    assert {a.path for a in client.list_artifacts(runs[0].info.run_id)} == {"report.md", "report.html", "attempts.csv", "balance.csv"}


def test_report_strings_from_runs_are_escaped_in_html(experiment):
    from gpucost_mlflow.report.render import page

    experiment("<script>alert(1)</script>", B200, 10.0)
    built, _ = report()
    text = page(built)
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_run_names_notes_and_error_messages_reach_the_html_as_text(experiment):
    from gpucost_mlflow.report.render import page

    experiment("batch8", B200, 10.0, run_name="<script>alert('name')</script>", note="<script>alert('note')</script>")
    experiment("batch8", B200, None, status="failed", run_name="<script>alert('run')</script>",
               reason="<img src=x onerror=alert('error')> CUDA out of memory")
    built, _ = report()
    text = page(built)
    assert "<script" not in text and "<img src=x" not in text
    assert "&lt;img src=x onerror=alert(&#x27;error&#x27;)&gt; CUDA out of memory" in text
