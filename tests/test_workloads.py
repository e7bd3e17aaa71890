"""Your own workload (docs/workloads.md): the workload field, user code through `python:`, failures kept as rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import mlflow
import pytest
import yaml
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import workloads
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.workloads.user_code import child as user_code
from tests.helpers import attempts_table

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "projects" / "variants.yaml"
EXAMPLE = ROOT / "examples" / "my_workload.py"
SHORT_BY_ONE = '''
def load(settings, device):
    return {"device": device}


def infer(state, texts):
    return [{"label": "fresh", "score": 1.0} for _ in texts[1:]]
'''


def variants_file(folder: Path, variants: dict, series: dict | None = None) -> Path:
    """A variants file with the shipped defaults, batch8 (the test protocol's reference) and the given variants."""
    defaults = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))["defaults"]
    path = folder / "variants.yaml"
    document = {"defaults": defaults, "variants": {"batch8": {"batch_size": 8}, **variants}}
    if series:
        document["series"] = series
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def refusal(path: Path) -> str:
    with pytest.raises(GpucostError) as refused:
        load_variants(path)
    assert "\n" not in str(refused.value)
    return str(refused.value)


@pytest.mark.unit
def test_a_variant_without_workload_is_the_built_in_classifier(tmp_path):
    variants = load_variants(variants_file(tmp_path, {}))
    assert variants["batch8"].settings.workload == "classification"
    assert variants["batch8"].settings.workload == "classification"


@pytest.mark.unit
def test_the_shipped_variants_declare_embeddings_and_the_example_user_code():
    variants = load_variants(SHIPPED)
    assert {variants[name].settings.workload for name in ("embed-batch1", "embed-batch4", "embed-batch8", "embed-batch8-bf16")} \
        == {"embeddings"}
    assert variants["embed-batch8-bf16"].reference == "embed-batch8"
    parsed = workloads.parse(variants["my-workload"].settings.workload, SHIPPED.parent)
    assert parsed.kind == "python" and Path(parsed.source) == EXAMPLE and not parsed.declares_flops


@pytest.mark.unit
@pytest.mark.parametrize(("declared", "source", "message"), [
    ("python:missing.py", None, "no such file"),
    ("python:no_infer.py", "def load(settings, device):\n    return None\n", "defines no infer()"),
    ("python:one_arg.py", "def load(settings, device):\n    return None\n\ndef infer(texts):\n    return texts\n",
     "infer() in one_arg.py takes 1 argument(s), the harness passes 2"),
    ("python:broken.py", "def load(:\n", "broken.py line 1"),
    ("python:no_such_module_anywhere", None, "no module 'no_such_module_anywhere' can be imported"),
    ("regression", None, "workload='regression' (allowed: classification, embeddings, generation, python:PATH_OR_MODULE)"),
])
def test_a_bad_workload_is_refused_in_one_line_when_the_variants_load(tmp_path, declared, source, message):
    if source is not None:
        (tmp_path / declared.removeprefix("python:")).write_text(source, encoding="utf-8")
    assert message in refusal(variants_file(tmp_path, {"mine": {"workload": declared}}))


@pytest.mark.unit
def test_user_code_is_found_by_module_name_without_running_it(tmp_path, monkeypatch):
    (tmp_path / "team_pipeline.py").write_text("raise SystemExit('never run at loading')\n"
                                               "from helpers import load\n\ndef infer(state, texts, *more):\n"
                                               "    return []\n\ndef flops(counts):\n    return 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    parsed = workloads.parse("python:team_pipeline", tmp_path)
    assert parsed.module == "team_pipeline" and parsed.declares_flops
    assert parsed.code_digest() and len(parsed.code_digest()) == 64


@pytest.mark.unit
def test_a_relative_user_code_path_copied_to_another_folder_still_reaches_the_same_file(tmp_path):
    moved = workloads.relocated("python:../examples/my_workload.py", SHIPPED.parent, tmp_path / "elsewhere")
    assert workloads.parse(moved, tmp_path / "elsewhere").source == str(EXAMPLE)
    assert workloads.relocated("python:team.pipeline", SHIPPED.parent, tmp_path) == "python:team.pipeline"
    assert workloads.relocated("embeddings", SHIPPED.parent, tmp_path) == "embeddings"


@pytest.mark.unit
def test_a_series_may_not_mix_workloads(tmp_path):
    path = variants_file(tmp_path, {"embed8": {"workload": "embeddings"}},
                         {"mixed": {"field": "batch_size", "variants": ["batch8", "embed8"]}})
    assert "series 'mixed': mixes workloads classification, embeddings" in refusal(path)


@pytest.mark.unit
def test_a_built_in_workload_must_deliver_what_the_protocol_judges():
    with pytest.raises(GpucostError, match="delivers embeddings, but p.yaml judges labels"):
        workloads.check_output(workloads.parse("embeddings", ROOT), "labels", "p.yaml")
    workloads.check_output(workloads.parse("python:" + str(EXAMPLE), ROOT), "embeddings", "p.yaml")  # either


@pytest.mark.unit
@pytest.mark.parametrize(("result", "message"), [
    ([{"label": "fresh"}], "infer returned 1 output(s) for 2 text(s) (batch 3)"),
    ({"label": "fresh"}, "infer returned a dict for batch 3, not a list of outputs"),
    ([{"label": "fresh", "score": float("nan")}, {"label": "rotten"}], "output 1 of batch 3 is not JSON"),
    ([{"label": "fresh", "extra": {1, 2}}, {"label": "rotten"}], "output 1 of batch 3 is not JSON"),
    ([[0.1, 0.2], {"label": "rotten"}], "output 2 of batch 3 is labels, earlier outputs were embeddings"),
    ([[0.1, 0.2], [0.3]], "output 2 of batch 3 has width 1"),
    (["fresh", "rotten"], "output 1 of batch 3 is a str: expected a dict with 'label' or a list of numbers"),
])
def test_outputs_that_break_the_contract_are_named_in_the_reason(result, message):
    with pytest.raises(user_code.OutputError) as broken:
        user_code._checked(result, 2, 3, "")
    assert message in str(broken.value)


@pytest.mark.unit
def test_labels_with_or_without_score_and_embeddings_are_both_outputs():
    assert user_code._checked([{"label": "fresh", "score": 0.9}, {"label": "plot"}], 2, 1, "") == "labels"
    assert user_code._checked([[0.5, 1], [0.25, -2.0]], 2, 1, "embeddings") == "embeddings"


@pytest.mark.unit
def test_flops_of_user_code_are_unknown_unless_its_module_counts_them():
    outputs = user_code.UserOutputs(ids=["a", "b"], outputs=[{}, {}], lengths=[5, 7], plan=[[0, 1]])
    settings = load_variants(SHIPPED)["batch8"].settings
    without = user_code.utilisation(SimpleNamespace(), None, settings, "cpu", outputs, 2.0)
    assert without["missing_measurements"]["useful_flop_per_s"].startswith("FLOPs unknown for user code")
    seen = []
    counting = SimpleNamespace(flops=lambda counts: seen.append(counts) or 4e9)
    import torch

    measured = user_code.utilisation(counting, None, settings, torch.device("cpu"), outputs, 2.0)
    assert seen == [[[5, 7]]]
    assert measured["metrics"]["useful_flop_per_s"] == 2e9 and "mfu_padded" in measured["missing_measurements"]


def run_pass(corpus: Path, model: Path, protocol: Path, variants: Path, variant: str) -> object:
    return CliRunner().invoke(main, ["pass", "--variant", variant, "--corpus", str(corpus), "--model", str(model),
                                     "--variants", str(variants), "--experiment", "t", "--protocol", str(protocol)])


@pytest.mark.integration
def test_my_workload_example_runs_as_a_pass_judged_by_the_classification_checks(store, corpus_dir, model_dir,
                                                                                 protocol_file, tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "my_workload.py")
    variants = variants_file(tmp_path, {"mine": {"workload": "python:my_workload.py"}})
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, variants, "mine")
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    (run,) = client.search_runs([mlflow.get_experiment_by_name("t").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] == "accepted"
    assert run.data.params["setting.workload"] == "python:my_workload.py"
    metrics = run.data.metrics
    assert metrics["expected_ids"] == metrics["observed_ids"] == metrics["completed_entries"] == 30
    assert {"load_s", "warmup_s", "pass_s", "export_s", "macro_f1", "mem_peak_rss_bytes"} <= set(metrics)
    assert "useful_flop_per_s" not in metrics and "mfu_useful" not in metrics
    manifest = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id,
                                                                   artifact_path="manifest.json")).read_text())
    assert manifest["workload"]["kind"] == "python" and len(manifest["workload"]["code_sha256"]) == 64
    assert manifest["model"]["architecture"] == "python:my_workload.py"
    verdict = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id,
                                                                  artifact_path="verdict.json")).read_text())
    assert verdict["missing_measurements"]["useful_flop_per_s"].startswith("FLOPs unknown for user code")
    table = attempts_table("t")
    assert table.loc[0, "workload"] == "python:my_workload.py"
    assert table.loc[0, "mfu_reason"].startswith("FLOPs unknown for user code")


@pytest.mark.integration
def test_infer_returning_one_output_too_few_is_a_failed_row_and_the_campaign_goes_on(store, corpus_dir, model_dir,
                                                                                     protocol_file, tmp_path):
    (tmp_path / "short.py").write_text(SHORT_BY_ONE, encoding="utf-8")
    shutil.copy(EXAMPLE, tmp_path / "my_workload.py")
    variants = variants_file(tmp_path, {"short": {"workload": "python:short.py"},
                                        "mine": {"workload": "python:my_workload.py"}})
    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(protocol_file.read_text().replace("passes_per_variant: 5", "passes_per_variant: 1"))
    result = CliRunner().invoke(main, ["campaign", "--variants", "short,mine", "--passes", "1", "--experiment", "t",
                                       "--corpus", str(corpus_dir / "comparison.jsonl"), "--model", str(model_dir),
                                       "--variants-file", str(variants), "--protocol", str(protocol)])
    assert result.exit_code == 0, result.output
    table = attempts_table("t")
    rows = {row.variant: row for row in table.itertuples()}
    assert set(rows) == {"short", "mine"}
    assert rows["short"].status == "failed"
    assert "infer returned 7 output(s) for 8 text(s) (batch 1)" in rows["short"].reason
    assert rows["short"].completed_entries == 0 and rows["mine"].status == "accepted"


@pytest.mark.unit
@pytest.mark.parametrize(("declared", "message"), [
    ("python:missing.py", "no such file"),
    ("python:no_infer.py", "defines no infer()"),
    ("summarisation", "workload='summarisation' (allowed:"),
])
def test_bad_workload_through_gpucost_pass_is_exit_2_and_no_run(store, corpus_dir, model_dir, protocol_file, tmp_path,
                                                                 declared, message):
    (tmp_path / "no_infer.py").write_text("def load(settings, device):\n    return None\n", encoding="utf-8")
    variants = variants_file(tmp_path, {"mine": {"workload": declared}})
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, variants, "mine")
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1
    assert mlflow.get_experiment_by_name("t") is None


@pytest.mark.unit
def test_an_embeddings_variant_under_a_labels_protocol_is_exit_2_and_no_run(store, corpus_dir, protocol_file):
    result = CliRunner().invoke(main, ["pass", "--variant", "embed-batch8", "--corpus", str(corpus_dir / "comparison.jsonl"),
                                       "--variants", str(SHIPPED), "--experiment", "t", "--protocol", str(protocol_file)])
    assert result.exit_code == 2 and "delivers embeddings" in result.output and "protocol-embeddings.yaml" in result.output
    assert mlflow.get_experiment_by_name("t") is None
