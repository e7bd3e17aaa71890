"""What each new input shape costs, apart from the steady rate (issue 62), on real passes: the test fault
`GPUCOST_FAULT=shape-setup:S` sleeps S seconds the first time a process meets a batch shape, as cuDNN's attention
builds a plan per new (batch, length) shape on a GPU. The steady lap does not see it; the first lap pays it once per
shape; the pass is flagged cold_shapes."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.names import DISTINCT_SHAPES, FIRST_LAP_S, SHAPE_SETUP_S, STEADY_LAP_S
from gpucost_mlflow.execution import runner
from gpucost_mlflow.tracking import schema
from tests.helpers import VARIANTS, pass_args

pytestmark = pytest.mark.integration

SETUP_S = 0.3


def _pass(tmp_path, corpus_dir, model_dir, fault: str, name: str):
    """One pass in this process, two laps, a warm-up of one input (a shape no measured batch has)."""
    settings = get_variant(VARIANTS, "batch8").settings
    spec = runner.PassSpec(corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(model_dir),
                           workdir=str(tmp_path / name), settings=settings, fault=fault, min_laps=2,
                           warmup={"inputs": 1, "passes": 1}, implementation=registry.implementation(settings))
    (tmp_path / name).mkdir()
    return runner.run(spec, time.perf_counter_ns()).measured.metrics


def test_a_new_shapes_setup_lands_in_the_first_lap_and_never_in_the_steady_one(tmp_path, corpus_dir, model_dir):
    plain = _pass(tmp_path, corpus_dir, model_dir, "", "plain")
    cold = _pass(tmp_path, corpus_dir, model_dir, f"shape-setup:{SETUP_S}", "cold")
    shapes = cold[DISTINCT_SHAPES]
    assert shapes == plain[DISTINCT_SHAPES] and 2 <= shapes <= 4  # 30 inputs in batches of 8, each its own width
    assert abs(cold[STEADY_LAP_S] - plain[STEADY_LAP_S]) < 0.1  # the steady lap sees none of it
    assert SETUP_S * shapes * 0.95 <= cold[SHAPE_SETUP_S] <= SETUP_S * shapes + 0.3  # about S x distinct shapes
    assert cold[FIRST_LAP_S] > 1.5 * cold[STEADY_LAP_S]


def test_a_pass_whose_first_lap_pays_its_shapes_is_flagged_cold_shapes(store, corpus_dir, model_dir, protocol_file,
                                                                       monkeypatch):
    monkeypatch.setenv("GPUCOST_FAULT", f"shape-setup:{SETUP_S}")
    result = CliRunner().invoke(main, pass_args(corpus_dir / "comparison.jsonl", model_dir, protocol_file))
    assert result.exit_code == 0, result.output
    (run,) = MlflowClient().search_runs([MlflowClient().get_experiment_by_name("t").experiment_id])
    metrics = run.data.metrics
    assert metrics["repetitions"] >= 2 and metrics[DISTINCT_SHAPES] >= 2
    assert run.data.tags[schema.COLD_SHAPES].startswith("first lap ") and "x the steady" in run.data.tags[
        schema.COLD_SHAPES]
    attempts = CliRunner().invoke(main, ["attempts", "--experiment", "t", "--protocol", str(protocol_file),
                                         "--format", "csv"])
    assert "cold_shapes: first lap" in attempts.output


PADDED = """defaults: {batch_size: 8, precision: fp32, quantization: none, compile: false, attention: sdpa,
           padding: longest, max_length: 256, length_grouping: none, device: auto}
series:
  shapes: {field: pad_to_multiple_of, reference: batch8, variants: [batch8-pad32]}
variants:
  batch8: {}
  batch8-pad32: {pad_to_multiple_of: 32}
"""


def test_a_pad_to_multiple_of_variant_bounds_its_shapes_and_is_judged_against_the_reference(
        store, corpus_dir, model_dir, protocol_file, tmp_path):
    variants = tmp_path / "variants.yaml"
    variants.write_text(PADDED)
    corpus = corpus_dir / "comparison.jsonl"
    for name in ("batch8", "batch8-pad32"):  # the fp32 reference first, then the padded variant against it
        result = CliRunner().invoke(main, pass_args(corpus, model_dir, protocol_file, name, variants=variants))
        assert result.exit_code == 0, result.output
    client = MlflowClient()
    runs = {run.data.tags[schema.VARIANT]: run for run in
            client.search_runs([client.get_experiment_by_name("t").experiment_id])}
    padded = runs["batch8-pad32"]
    assert padded.data.params["setting.pad_to_multiple_of"] == "32"
    assert padded.data.metrics[DISTINCT_SHAPES] <= 256 // 32  # at most ceil(max_length / 32) lengths at batch 8
    assert padded.data.tags[schema.STATUS] == "accepted"
    assert "reference_agreement" in padded.data.tags[schema.CHECKS], padded.data.tags[schema.CHECKS]  # judged
    assert "setting.pad_to_multiple_of" not in runs["batch8"].data.params  # unset: recorded as before


def test_the_first_lap_benchmark_runs_end_to_end_and_prints_each_variants_ratio(corpus_dir, model_dir, protocol_file,
                                                                               capsys):
    from tests.helpers import load_benchmark

    rows = load_benchmark("first_lap").main(["--variants", "batch8", "--laps", "2", "--protocol", str(protocol_file),
                                             "--corpus", str(corpus_dir / "comparison.jsonl"), "--model",
                                             str(model_dir)])
    (row,) = rows
    assert row["variant"] == "batch8" and row["steady_lap_s"] > 0 and row["distinct_shapes"] >= 2
    assert row["ratio"] == row["first_lap_s"] / row["steady_lap_s"]
    assert "first/steady" in capsys.readouterr().out
