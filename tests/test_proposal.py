"""The third series (issue 15): accepted changes combined, a batch-size sweep under them, locked at its first pass."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import pytest
import yaml
from click.testing import CliRunner
from mlflow.entities import RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.campaign.proposal import Change, propose
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import load_series, load_variants
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.flow.campaign import larger_batches
from gpucost_mlflow.tracking import experiments, schema, writer
from tests.helpers import VARIANTS, run_pass


def shipped():
    return load_variants(VARIANTS)


@dataclass(frozen=True)
class WithTopK(Settings):
    """A kind's own settings record (core/kinds/settings.py): one more field."""

    top_k: int = 1


@pytest.mark.unit
def test_a_kinds_own_setting_combined_into_a_proposal_is_named_by_key_and_value():
    batch8 = shipped()["batch8"]
    reference = replace(batch8, settings=WithTopK(**asdict(batch8.settings)))
    proposal = propose(reference, [Change("batch8-bf16", {"precision": "bf16"}, True),
                                   Change("batch8-top5", {"top_k": 5}, True)], "combined", sweep=(16,))
    assert list(proposal.variants) == ["batch8-bf16-top_k-5", "batch16-bf16-top_k-5"]
    assert proposal.variants["batch8-bf16-top_k-5"].top_k == 5 and proposal.fields == ("batch_size", "precision", "top_k")


@pytest.mark.unit
def test_only_accepted_changes_are_combined_and_the_sweep_runs_under_all_of_them():
    v = shipped()
    changes = [Change("batch8-bf16", {"precision": "bf16"}, True), Change("batch8-lengthgrouped", {"length_grouping": "sorted"}, True),
               Change("batch8-int8", {"quantization": "dynamic-int8", "device": "cpu"}, False, "5 rejected attempt(s)")]
    proposal = propose(v["batch8"], changes, "combined")
    assert list(proposal.variants) == ["batch8-bf16-lengthgrouped", "batch16-bf16-lengthgrouped",
                                       "batch32-bf16-lengthgrouped", "batch64-bf16-lengthgrouped"]
    assert proposal.combined == ("batch8-bf16", "batch8-lengthgrouped")
    assert proposal.left_out == {"batch8-int8": "not accepted (5 rejected attempt(s))"}
    assert proposal.fields == ("batch_size", "length_grouping", "precision")
    assert all(s.quantization == "none" for s in proposal.variants.values())


@pytest.mark.unit
def test_one_accepted_change_gives_only_its_sweep():
    v = shipped()
    proposal = propose(v["batch8"], [Change("batch8-bf16", {"precision": "bf16"}, True),
                                     Change("batch8-lengthgrouped", {"length_grouping": "sorted"}, False, "rejected")], "combined")
    assert list(proposal.variants) == ["batch16-bf16", "batch32-bf16", "batch64-bf16"]
    assert "batch8-lengthgrouped" in proposal.left_out


@pytest.mark.unit
def test_a_truncation_is_combined_only_when_it_was_accepted_against_the_reference():
    v = shipped()
    grouped = Change("batch8-lengthgrouped", {"length_grouping": "sorted"}, True)
    alone = propose(v["batch8"], [grouped, Change("batch8-len32", {"max_length": 32}, True, against_reference=False)],
                    "combined")
    assert alone.left_out == {"batch8-len32": "changes the work (max_length) and was accepted on the absolute bars "
                                              "alone, never compared with the reference"}
    assert "max_length" not in alone.fields
    compared = propose(v["batch8"], [grouped, Change("batch8-len32", {"max_length": 32}, True)], "combined")
    assert "batch8-len32-lengthgrouped" in compared.variants and not compared.left_out


@pytest.mark.unit
def test_a_precision_slower_than_fp32_on_the_device_is_not_proposed():
    v = shipped()
    slow = {"bf16": "its dense-matmul peak here is below fp32's"}
    proposal = propose(v["batch8"], [Change("batch8-bf16", {"precision": "bf16"}, True),
                                     Change("batch8-lengthgrouped", {"length_grouping": "sorted"}, True)], "combined", slow)
    assert list(proposal.variants) == ["batch16-lengthgrouped", "batch32-lengthgrouped", "batch64-lengthgrouped"]
    assert proposal.left_out == {"batch8-bf16": slow["bf16"]}


@pytest.mark.unit
def test_on_a_gpu_the_combination_is_also_offered_compiled_and_in_fp16():
    v = shipped()
    proposal = propose(v["batch8"], [Change("batch8-bf16", {"precision": "bf16"}, True),
                                     Change("batch8-lengthgrouped", {"length_grouping": "sorted"}, True)], "combined", gpu=True)
    assert list(proposal.variants)[-2:] == ["batch8-bf16-compiled-lengthgrouped", "batch8-fp16-lengthgrouped"]
    assert "compile" in proposal.fields and "batch64-fp16-lengthgrouped" not in proposal.variants


@pytest.mark.unit
def test_an_accepted_engine_is_one_more_change_to_combine_where_it_can_run_the_others():
    v = shipped()
    changes = [Change("ort-batch8", {"engine": "onnxruntime"}, True),
               Change("batch8-lengthgrouped", {"length_grouping": "sorted"}, True),
               Change("batch8-bf16", {"precision": "bf16"}, True)]
    proposal = propose(v["batch8"], changes, "combined")
    assert "batch8-lengthgrouped-ort" in proposal.variants and "batch64-lengthgrouped-ort" not in proposal.variants
    assert proposal.variants["batch8-lengthgrouped-ort"].engine == "onnxruntime"
    assert "engine onnxruntime takes precision fp32, not bf16" in proposal.left_out["batch8-bf16-ort"]
    assert "batch8-bf16-lengthgrouped" in proposal.variants and "engine" in proposal.fields


@pytest.mark.unit
def test_no_accepted_change_is_refused():
    with pytest.raises(GpucostError, match="no accepted change to combine"):
        propose(shipped()["batch8"], [Change("batch8-bf16", {"precision": "bf16"}, False, "rejected")], "combined")


@pytest.mark.unit
def test_after_an_out_of_memory_batch_the_larger_sizes_of_its_sweep_are_not_tried():
    v = shipped()
    assert larger_batches(v, v["batch4"], ["batch1", "batch4", "batch8", "batch8-bf16"]) == ["batch8"]
    assert larger_batches(v, v["batch8"], ["batch1", "batch4", "batch8"]) == []


@pytest.fixture
def finished_campaign(store, protocol_file):
    """An experiment under the test protocol with one finished campaign: bf16 accepted, lengthgrouped rejected."""
    client = MlflowClient()
    protocol = load_protocol(protocol_file)
    experiment_id = experiments.resolve(client, "t", create=True).id
    experiments.lock(client, experiment_id, "t", protocol, protocol_file.read_text())
    parent = client.create_run(experiment_id, tags={schema.ROLE: schema.CAMPAIGN_ROLE, schema.CAMPAIGN_ID: "c1"})
    for variant, status in (("batch8", "accepted"), ("batch8-bf16", "accepted"), ("batch8-lengthgrouped", "rejected")):
        tags = writer.start_tags(role="benchmark", variant=variant,
                                 basis=writer.Basis("cpu", "cpu", "a" * 64, protocol.digest), campaign_id="c1")
        run = client.create_run(experiment_id, tags=tags)
        writer.log_outcome(client, run.info.run_id, status=status, reason="r", metrics={"pass_s": 1.0},
                           quality_verdict="passed")
        client.set_terminated(run.info.run_id, "FINISHED")
    client.set_terminated(parent.info.run_id, "FINISHED")
    return client, parent


@pytest.mark.integration
def test_propose_combines_only_the_accepted_change_and_its_series_locks_at_the_first_pass(finished_campaign, tmp_path,
                                                                                          corpus_dir, model_dir, protocol_file):
    out = tmp_path / "proposed.yaml"
    result = CliRunner().invoke(main, ["variants", "propose", "--experiment", "t", "--out", str(out), "--variants-file", str(VARIANTS)])
    assert result.exit_code == 0, result.output
    assert "combines batch8-bf16: batch16-bf16, batch32-bf16, batch64-bf16" in result.output
    assert "left out batch8-lengthgrouped: not accepted" in result.output
    series = load_series(out)["combined"]
    assert series.members == ("batch16-bf16", "batch32-bf16", "batch64-bf16") and series.reference == "batch8"
    assert series.proposed_from == "c1" and "batch8-lengthgrouped" in load_variants(out)  # every declared variant kept

    def sweep_pass(variants_file):
        return run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "batch16-bf16", variants=variants_file)

    assert sweep_pass(out).exit_code == 0
    assert MlflowClient().get_experiment_by_name("t").tags[f"{schema.SERIES_LOCK_PREFIX}combined"]
    edited = tmp_path / "edited.yaml"
    document = yaml.safe_load(out.read_text())
    document["variants"]["batch32-bf16"]["max_length"] = 128
    document["series"]["combined"]["field"].append("max_length")
    edited.write_text(yaml.safe_dump(document, sort_keys=False))
    refused = sweep_pass(edited)
    assert refused.exit_code == 2 and "series 'combined' of experiment 't' was locked at its first pass" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


@pytest.mark.unit
def test_propose_without_a_finished_campaign_or_an_accepted_change_writes_nothing(finished_campaign, tmp_path):
    client, parent = finished_campaign
    out = tmp_path / "proposed.yaml"
    client.log_batch(parent.info.run_id, tags=[RunTag(schema.ROLE, "campaign")])
    runs = client.search_runs([parent.info.experiment_id], filter_string=f"tags.`{schema.VARIANT}` = 'batch8-bf16'")
    client.set_tag(runs[0].info.run_id, schema.STATUS, "rejected")
    result = CliRunner().invoke(main, ["variants", "propose", "--experiment", "t", "--out", str(out), "--variants-file", str(VARIANTS)])
    assert result.exit_code == 2 and "no accepted change to combine" in result.output and not out.exists()
    client.update_run(parent.info.run_id, "RUNNING")
    result = CliRunner().invoke(main, ["variants", "propose", "--experiment", "t", "--out", str(out), "--variants-file", str(VARIANTS)])
    assert result.exit_code == 2 and "no finished campaign" in result.output and not out.exists()
    assert len(result.output.strip().splitlines()) == 1
