"""Every pass logs useful and padded FLOP/s and, against the device's cached dense-matmul peak, MFU (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
import torch
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.execution import devices, environment, peak
from gpucost_mlflow.tracking.attempts_table import render
from gpucost_mlflow.workloads.classification import batches
from gpucost_mlflow.workloads.classification import model as classifier_model
from tests.helpers import VARIANTS, attempts_table, only_run, run_pass


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache" / "peak.json"
    monkeypatch.setenv(peak.ENV, str(path))
    return path


def planted_peak(precision: str = "fp32", flop_per_s: float = 1e11) -> peak.Peak:
    """A cached entry for this CPU as `doctor --peak` would write it (the value is planted, not measured)."""
    return peak.Peak(device=devices.cpu_name(), torch=torch.__version__, threads=torch.get_num_threads(),
                     precision=precision, flop_per_s=flop_per_s, size=64, measured_at="2026-11-30T00:00:00+00:00")


@pytest.mark.unit
def test_doctor_peak_measures_every_precision_on_the_cpu_and_caches_it(cache, monkeypatch):
    monkeypatch.setattr(peak, "CPU_SIZES", (64,))
    result = CliRunner().invoke(main, ["doctor", "--peak", "--device", "cpu", "--min-time", "0.01"])
    assert result.exit_code == 0, result.output
    entries = json.loads(cache.read_text())["peaks"]
    assert {e["precision"] for e in entries} == {"fp32", "bf16", "fp16", "int8-dynamic"}
    assert all(e["flop_per_s"] > 0 and e["threads"] == torch.get_num_threads() and e["size"] == 64 for e in entries)
    assert "dense matmul peak fp32:" in result.output and str(cache) in result.output
    again = CliRunner().invoke(main, ["doctor", "--peak", "--if-missing", "--device", "cpu"])
    assert again.exit_code == 0 and "measuring" not in again.output and "dense matmul peak fp32:" in again.output


@pytest.mark.unit
def test_doctor_without_a_cached_peak_says_mfu_stays_empty(cache):
    result = CliRunner().invoke(main, ["doctor", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "none cached" in result.output and "MFU stays empty" in result.output


@pytest.mark.unit
def test_a_corrupt_peak_cache_is_a_one_line_error(cache):
    cache.parent.mkdir(parents=True)
    cache.write_text("not json")
    result = CliRunner().invoke(main, ["doctor", "--device", "cpu"])
    assert result.exit_code == 2 and "not a gpucost peak cache" in result.output


@pytest.mark.unit
def test_a_peak_holds_for_one_device_torch_version_thread_count_and_precision(cache):
    peak.save([planted_peak("fp32"), planted_peak("bf16", 2e11)])
    cpu = torch.device("cpu")
    assert peak.lookup(cpu, "fp32")[0].flop_per_s == 1e11 and peak.lookup(cpu, "bf16")[0].flop_per_s == 2e11
    missing, why = peak.lookup(cpu, "int8-dynamic")
    assert missing is None and "doctor --peak" in why
    int8 = get_variant(VARIANTS, "batch8").settings.changed(quantization="dynamic-int8")
    assert peak.precision_of(int8) == "int8-dynamic"
    other = planted_peak("fp32")
    assert peak.cache_key(other.device, "0.0", other.threads, "fp32") not in peak.load_cache()


@pytest.mark.integration
def test_a_pass_logs_useful_and_padded_mfu_against_the_cached_peak(store, corpus_dir, model_dir, protocol_file, cache):
    peak.save([planted_peak("fp32", 1e11)])
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 0, result.output
    run = only_run()
    metrics = run.data.metrics
    assert metrics["peak_flop_per_s"] == 1e11
    assert 0 < metrics["useful_flop_per_s"] <= metrics["padded_flop_per_s"]
    assert metrics["mfu_useful"] == pytest.approx(metrics["useful_flop_per_s"] / 1e11)
    assert metrics["mfu_padded"] == pytest.approx(metrics["padded_flop_per_s"] / 1e11)
    assert metrics["tokens_real"] <= metrics["tokens_padded"] and 0 <= metrics["padding_share"] < 1
    path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="manifest.json")
    recorded = json.loads(Path(path).read_text())["stack"]["matmul_peak"]
    assert recorded["peaks"]["fp32"]["flop_per_s"] == 1e11 and recorded["cache"] == str(cache)
    table = attempts_table("t")
    assert table.loc[0, "mfu_reason"] == "" and table.loc[0, "mfu_useful"] == metrics["mfu_useful"]


@pytest.mark.integration
def test_without_a_cached_peak_mfu_is_an_empty_cell_with_its_reason(store, corpus_dir, model_dir, protocol_file, cache):
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 0, result.output
    run = only_run()
    metrics = run.data.metrics
    assert metrics["useful_flop_per_s"] > 0 and metrics["padded_flop_per_s"] > 0
    assert "mfu_useful" not in metrics and "mfu_padded" not in metrics and "peak_flop_per_s" not in metrics
    table = attempts_table("t")
    assert "doctor --peak" in table.loc[0, "mfu_reason"] and "mfu empty" in table.loc[0, "notes"]
    assert "doctor --peak" in render(table, "markdown", [])
    verdict = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="verdict.json")).read_text())
    assert "doctor --peak" in verdict["missing_measurements"]["mfu_useful"]


@pytest.mark.unit
def test_length_grouping_leaves_less_padding_than_corpus_order(corpus_dir, model_dir, cache):
    from gpucost_mlflow.core.inputs.corpus import read_corpus
    from gpucost_mlflow.execution import models
    from gpucost_mlflow.workloads.classification import records

    settings = {name: get_variant(VARIANTS, name).settings for name in ("batch8", "batch8-lengthgrouped")}
    tokenizer = models.load_tokenizer(model_dir)
    model = classifier_model.load_classifier(model_dir, torch.device("cpu"), "fp32", "none", "sdpa", False)
    rows = read_corpus(corpus_dir / "comparison.jsonl").rows
    ids, texts = [r["id"] for r in rows], [r["text"] for r in rows]
    config = model.config.to_dict()
    shares = {}
    for name, s in settings.items():
        predictions = batches.process(ids, texts, tokenizer, model, s, torch.device("cpu"))
        outcome = records.utilisation(config, s, torch.device("cpu"), predictions, 1.0)
        shares[name] = outcome["metrics"]
        assert set(outcome["missing_measurements"]) == {"mfu_useful", "mfu_padded"}
    assert shares["batch8-lengthgrouped"]["flops_useful"] == shares["batch8"]["flops_useful"]
    assert shares["batch8-lengthgrouped"]["padding_share"] < shares["batch8"]["padding_share"]


@pytest.mark.unit
def test_environment_txt_is_read_once_until_a_package_folder_changes():
    environment._distributions.cache_clear()
    first = environment.all_distributions()
    assert environment.all_distributions() == first and "torch==" in first
    assert environment._distributions.cache_info().hits == 1
