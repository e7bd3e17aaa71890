"""Like for like, or no verdict (issue 51, item 3): a variant judged against the reference asks the model what the
reference asks (max_length and padding for labels and embeddings, max_new_tokens for generated text), or it is not
comparable, naming the setting, unless the protocol declares that setting a change of work."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging import judge, like_for_like, verdicts
from gpucost_mlflow.core.judging.judge import Judging
from gpucost_mlflow.workloads.classification import output as labels_output
from gpucost_mlflow.workloads.generation import output as gv
from gpucost_mlflow.workloads.generation.launch import task_of
from tests.helpers import LABELS, VARIANTS, checks_of, only_run, run_pass, write_protocol
from tests.test_generation import ROWS, loaded, protocol_text, read_back


@pytest.fixture
def variants(tmp_path):
    shipped = yaml.safe_load(VARIANTS.read_text(encoding="utf-8"))
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump({"defaults": shipped["defaults"], "variants": {
        "batch8": {"batch_size": 8}, "batch8-len32": {"batch_size": 8, "max_length": 32},
        "gen-batch8": {"batch_size": 8, "workload": "generation"},
        "gen-short": {"batch_size": 8, "workload": "generation", "max_new_tokens": 4}}}))
    return path


@pytest.mark.unit
def test_a_generation_variant_with_another_max_new_tokens_and_no_declaration_is_not_comparable(tmp_path, variants):
    found = load_variants(variants)
    protocol = loaded(tmp_path, protocol_text(size=4, buckets="{short: 4}"))
    unlike = like_for_like.check(found["gen-short"].settings, found["gen-batch8"].settings, "gen-batch8",
                                 gv.LIKE_FOR_LIKE, protocol.acceptance.changes_work)
    assert unlike.reason.startswith("not comparable with gen-batch8: max_new_tokens 4 against 0 (")
    same = read_back({i: "fresh" for i in "abcd"}, {i: [7, 2] for i in "abcd"})
    given = Judging(completed=True, failure_reason="", rows=ROWS, back=same, protocol=protocol, labels=LABELS,
                    needs_reference=True, reference_name="gen-batch8", unlike=unlike)
    judged = gv.judge_generations(given)
    assert (judged.status, judged.quality_verdict) == ("rejected", "not comparable: max_new_tokens")
    assert "comparable: not comparable with gen-batch8: max_new_tokens 4 against 0" in judged.reason
    declared = loaded(tmp_path, protocol_text(size=4, buckets="{short: 4}").replace(
        "min_token_agreement: 0.0}", "min_token_agreement: 0.0, changes_work: [max_new_tokens]}"))
    assert declared.acceptance.changes_work == ("max_new_tokens",)
    assert like_for_like.check(found["gen-short"].settings, found["gen-batch8"].settings, "gen-batch8",
                               gv.LIKE_FOR_LIKE, declared.acceptance.changes_work) is None
    assert gv.judge_generations(replace(given, unlike=None)).status == "pending"  # compared as any variant is


@pytest.mark.unit
def test_a_variant_runs_its_own_max_new_tokens_never_above_the_protocols(tmp_path, variants):
    found = load_variants(variants)
    protocol = loaded(tmp_path, protocol_text(new=8))
    assert task_of(found["gen-short"], protocol).max_new_tokens == 4
    assert task_of(found["gen-batch8"], protocol) == protocol.task
    assert "max_new_tokens" not in found["gen-batch8"].settings.record()  # records as before where not set
    with pytest.raises(GpucostError, match="max_new_tokens 4 is above the protocol's generation.max_new_tokens 2"):
        task_of(found["gen-short"], loaded(tmp_path, protocol_text(new=2)))


@pytest.mark.unit
def test_a_shorter_max_length_is_not_comparable_unless_declared_a_change_of_work(tmp_path, variants):
    found = load_variants(variants)
    rows = [{"id": str(i), "label": LABELS[i % 3], "bucket": "short"} for i in range(30)]
    protocol = write_protocol(tmp_path / "p.yaml")
    from gpucost_mlflow.core.inputs.protocol import load_protocol

    loaded_protocol = load_protocol(protocol)
    unlike = like_for_like.check(found["batch8-len32"].settings, found["batch8"].settings, "batch8",
                                 labels_output.LIKE_FOR_LIKE, loaded_protocol.acceptance.changes_work)
    back = verdicts.ReadBack(ids=[r["id"] for r in rows], labels={r["id"]: r["label"] for r in rows})
    judged = judge.judge(Judging(completed=True, failure_reason="", rows=rows, back=back, protocol=loaded_protocol,
                                 labels=LABELS, needs_reference=True, reference_name="batch8", unlike=unlike))
    assert (judged.status, judged.quality_verdict) == ("rejected", "not comparable: max_length")
    protocol.write_text(protocol.read_text().replace("min_label_agreement:", "changes_work: [max_length]\n"
                                                     "    min_label_agreement:"))
    declared = load_protocol(protocol)
    assert like_for_like.check(found["batch8-len32"].settings, found["batch8"].settings, "batch8",
                               labels_output.LIKE_FOR_LIKE, declared.acceptance.changes_work) is None
    protocol.write_text(protocol.read_text().replace("[max_length]", "[batch_size]"))
    with pytest.raises(GpucostError, match="changes_work' names batch_size; this output's work is decided by "
                                           "max_length, padding"):
        load_protocol(protocol)


@pytest.mark.integration
def test_a_real_pass_with_a_shorter_max_length_is_recorded_as_not_comparable(store, corpus_dir, model_dir, tmp_path,
                                                                             variants):
    protocol = write_protocol(tmp_path / "protocol.yaml")
    done = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol, "batch8-len32", variants=variants)
    assert done.exit_code == 0 and "pass batch8-len32: rejected (comparable: not comparable with batch8" in done.output
    run = only_run()
    assert run.data.tags["gpucost.quality_verdict"] == "not comparable: max_length"
    assert checks_of(run)["comparable"].startswith("fail: not comparable with batch8: max_length 32 against 256")
