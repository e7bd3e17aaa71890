"""Inference engines as variants (docs/engines.md): declared, refused in one line when absent, run behind the
workload's seam, judged against the fp32 torch reference, their exports cached and counted as rental time."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.kinds import engines
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.workloads import engine_cache
from tests.helpers import VARIANTS, checks_of, run_pass
from tests.test_embeddings import PROTOCOL as EMBEDDINGS_PROTOCOL

ORT = importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("onnxscript") is not None
needs_ort = pytest.mark.skipif(not ORT, reason="onnxruntime, onnx and onnxscript are not installed (make install)")


def variants_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "variants.yaml"
    path.write_text("defaults: {batch_size: 8, precision: fp32, quantization: none, compile: false, attention: sdpa,"
                    " padding: longest, max_length: 64, length_grouping: none, device: cpu}\nvariants:\n" + body,
                    encoding="utf-8")
    return path


@pytest.mark.unit
def test_torch_is_the_default_engine_and_leaves_todays_settings_unchanged():
    variants = load_variants(VARIANTS)
    assert variants["batch8"].settings.engine == "torch" and "engine" not in variants["batch8"].settings.record()
    assert variants["ort-batch8"].settings.record()["engine"] == "onnxruntime"
    assert variants["ort-batch8"].series == "engine" and variants["ort-batch8"].reference == "batch8"


@pytest.mark.unit
def test_an_engine_variant_is_judged_against_the_torch_reference():
    variants = load_variants(VARIANTS)
    assert verdicts.needs_reference(variants["ort-batch8"].settings, variants["batch8"].settings)
    assert not verdicts.needs_reference(variants["batch4"].settings, variants["batch8"].settings)


@pytest.mark.unit
@pytest.mark.parametrize(("body", "says"), [
    ("  x: {engine: tensorrt}\n", "engine='tensorrt' (allowed: torch, onnxruntime, ctranslate2, vllm, openai)"),
    ("  x: {engine: onnxruntime, workload: generation}\n", "engine onnxruntime does not serve workload generation"),
    ("  x: {engine: onnxruntime, precision: bf16}\n", "engine onnxruntime takes precision fp32, not bf16"),
    ("  x: {engine: onnxruntime, compile: true}\n", "compile is torch.compile, which engine onnxruntime does not run"),
    ("  x: {engine: vllm, workload: generation, quantization: dynamic-int8}\n", "engine vllm takes quantization none"),
])
def test_an_engine_that_cannot_run_the_variant_is_refused_in_one_line(tmp_path, body, says):
    with pytest.raises(GpucostError, match="variant 'x'") as caught:
        load_variants(variants_file(tmp_path, body))
    assert says in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.unit
def test_the_export_cache_is_keyed_by_revision_engine_version_and_options(tmp_path, monkeypatch):
    monkeypatch.setenv(engine_cache.CACHE_ENV, str(tmp_path))
    first = engine_cache.cache_folder("onnxruntime", "rev1", "1.0", {"quantization": "none"})
    assert first == engine_cache.cache_folder("onnxruntime", "rev1", "1.0", {"quantization": "none"})
    assert first.parent == tmp_path
    assert len({first, engine_cache.cache_folder("onnxruntime", "rev2", "1.0", {"quantization": "none"}),
                engine_cache.cache_folder("onnxruntime", "rev1", "1.1", {"quantization": "none"}),
                engine_cache.cache_folder("onnxruntime", "rev1", "1.0", {"quantization": "int8"}),
                engine_cache.cache_folder("ctranslate2", "rev1", "1.0", {"quantization": "none"})}) == 5


@pytest.mark.integration
def test_a_variant_whose_engine_is_not_installed_is_refused_and_leaves_no_run(store, corpus_dir, model_dir,
                                                                              protocol_file, tmp_path, monkeypatch):
    monkeypatch.setattr(engines.Engine, "missing", lambda self: list(self.modules) if self.name != "torch" else [])
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "ort-batch8", experiment="absent")
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert "variant 'ort-batch8' runs on engine onnxruntime" in line and "pip install onnxruntime onnx onnxscript" in line
    assert "Traceback" not in result.output
    experiment = MlflowClient().get_experiment_by_name("absent")
    assert experiment is None or not MlflowClient().search_runs([experiment.experiment_id])


@needs_ort
@pytest.mark.integration
def test_an_onnxruntime_classifier_is_accepted_against_torch_and_reuses_its_export(store, corpus_dir, model_dir,
                                                                                  protocol_file, tmp_path, monkeypatch):
    monkeypatch.setenv(engine_cache.CACHE_ENV, str(tmp_path / "engines"))
    corpus = corpus_dir / "comparison.jsonl"
    for variant in ("batch8", "ort-batch8", "ort-batch8"):
        result = run_pass(corpus, model_dir, protocol_file, variant, experiment="ort")
        assert result.exit_code == 0, result.output
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("ort").experiment_id], order_by=["attributes.start_time"])
    torch_run, first, second = runs
    assert first.data.tags[schema.STATUS] == "accepted", first.data.tags.get(schema.STATUS_REASON)
    assert torch_run.info.run_id in checks_of(first)["reference_agreement"]
    assert first.data.params["setting.engine"] == "onnxruntime" and "setting.engine" not in torch_run.data.params
    manifests = [json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="manifest.json",
                                                                     dst_path=str(tmp_path / run.info.run_id))).read_text())
                 for run in (first, second)]
    assert manifests[0]["engine"]["name"] == "onnxruntime" and manifests[0]["engine"]["version"]
    assert manifests[0]["engine"]["options"]["provider"] == "CPUExecutionProvider"
    assert manifests[0]["engine"]["options"]["graph_optimization"] == "ORT_ENABLE_ALL"
    assert [m["engine"]["cache_present_at_start"] for m in manifests] == [False, True]
    assert first.data.metrics["convert_s"] > 0 and "convert_s" not in second.data.metrics
    assert "engine cache" in second.data.params[schema.MISSING_PREFIX + "convert_s"]
    assert second.data.tags[schema.STATUS] == "accepted"


@needs_ort
@pytest.mark.integration
def test_onnxruntime_embeddings_are_accepted_by_cosine_against_torch(store, corpus_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(engine_cache.CACHE_ENV, str(tmp_path / "engines"))
    protocol = tmp_path / "protocol-embeddings.yaml"
    protocol.write_text(EMBEDDINGS_PROTOCOL, encoding="utf-8")
    corpus = corpus_dir / "comparison.jsonl"
    for variant in ("embed-batch8", "ort-embed-batch8"):
        result = CliRunner().invoke(main, ["pass", "--variant", variant, "--corpus", str(corpus), "--variants",
                                           str(VARIANTS), "--experiment", "ort-embed", "--protocol", str(protocol)])
        assert result.exit_code == 0, result.output
    client = MlflowClient()
    runs = {r.data.tags[schema.VARIANT]: r
            for r in client.search_runs([client.get_experiment_by_name("ort-embed").experiment_id])}
    ort = runs["ort-embed-batch8"]
    assert ort.data.tags[schema.STATUS] == "accepted", ort.data.tags.get(schema.STATUS_REASON)
    assert ort.data.metrics["cosine_min"] >= 0.999


@pytest.mark.unit
def test_the_forecast_counts_one_engine_export_per_rental():
    from gpucost_mlflow.core.measurement.stats import Durations
    from gpucost_mlflow.core.money.forecast import forecast

    plan = {"setup_hours": 4, "waiting_hours": 0, "planned_restarts": 2}
    durations = Durations((360.0, 360.0, 360.0))
    plain = forecast(plan, 10, durations, {"load_s": 36.0}, ())
    exported = forecast(plan, 10, durations, {"load_s": 36.0, "convert_s": 720.0}, ())
    assert exported.hours - plain.hours == pytest.approx(0.2)  # 720 s once, not once per restart
    assert "0.200 h engine export (once per rental)" in exported.terms()
    assert "engine export" not in plain.terms()


@needs_ort
@pytest.mark.unit
def test_a_gpu_pass_on_an_onnxruntime_without_a_gpu_provider_is_refused_not_moved_to_the_cpu(monkeypatch):
    import onnxruntime

    from gpucost_mlflow.workloads import ort

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    with pytest.raises(GpucostError, match="install onnxruntime-gpu") as refused:
        ort.provider("cuda")
    assert "\n" not in str(refused.value)
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert ort.provider("cuda") == "CUDAExecutionProvider" and ort.provider("cpu") == "CPUExecutionProvider"
