"""The attention kernel, named and chosen (issue 62): a variant's sdpa_backend, checked, pinned for the whole pass,
and the kernel torch selects for the first measured batch recorded in the pass's stack (execution/attention.py)."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
import yaml

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import CHOICES, load_variants
from gpucost_mlflow.core.judging.verdicts import needs_reference
from gpucost_mlflow.tracking import schema
from tests.helpers import VARIANTS, only_run, run_pass


def _variants(tmp_path: Path, **declared: dict) -> Path:
    """A variants file with the shipped defaults, batch8 and the variants given."""
    shipped = yaml.safe_load(VARIANTS.read_text())
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump({"defaults": shipped["defaults"], "variants": {"batch8": {}, **declared}}))
    return path


@pytest.mark.unit
def test_an_unknown_sdpa_backend_is_refused_in_one_line(tmp_path):
    with pytest.raises(GpucostError) as caught:
        load_variants(_variants(tmp_path, fast={"sdpa_backend": "fastest"}))
    message = str(caught.value)
    assert "\n" not in message
    assert message.endswith("variant 'fast' has sdpa_backend='fastest' (allowed: default, flash, efficient, cudnn, math)")


@pytest.mark.unit
@pytest.mark.parametrize(("declared", "says"), [
    ({"engine": "onnxruntime"}, "sdpa_backend pins torch's attention kernel, which engine onnxruntime does not run"),
    ({"attention": "eager"}, ("sdpa_backend flash pins torch's scaled_dot_product_attention, which attention: eager "
                              "does not call; set attention: sdpa")),
])
def test_a_pinned_backend_needs_torch_running_sdpa_attention(tmp_path, declared, says):
    with pytest.raises(GpucostError, match="variant 'pinned'") as caught:
        load_variants(_variants(tmp_path, pinned={"sdpa_backend": "flash", **declared}))
    assert says in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.unit
def test_the_default_is_left_out_of_the_record_and_a_pinned_backend_is_judged_against_the_reference(tmp_path):
    variants = load_variants(_variants(tmp_path, math={"sdpa_backend": "math"}))
    default, pinned = variants["batch8"].settings, variants["math"].settings
    assert default.sdpa_backend == "default" and "sdpa_backend" not in default.record()
    assert pinned.record()["sdpa_backend"] == "math"
    assert pinned.differing(default) == ["sdpa_backend"] and needs_reference(pinned, default)
    assert type(pinned).from_record(pinned.record()) == pinned


@pytest.mark.unit
def test_the_observed_stack_becomes_params_and_a_few_kv_heads_on_cudnn_carry_a_note():
    attention = pytest.importorskip("gpucost_mlflow.execution.attention")  # torch
    assert set(attention.PINS) == set(CHOICES["sdpa_backend"]) - {"default"}
    note = attention.cudnn_note("cudnn", 3)
    assert "3 KV heads" in note and "pytorch/pytorch#193893" in note
    assert attention.cudnn_note("cudnn", 8) == attention.cudnn_note("flash", 3) == ""
    choice = attention.Choice(backend="cudnn", kernel="aten::_scaled_dot_product_cudnn_attention", pinned="default",
                              attn_implementation="sdpa", enabled={"flash": True, "math": True, "cudnn": False},
                              cudnn_env={"TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED": "1"}, num_attention_heads=9,
                              num_key_value_heads=3, note=note)
    params = schema.observed_stack_params({"sdpa": choice.record()})
    assert params == {"stack.sdpa.backend": "cudnn", "stack.sdpa.kernel": "aten::_scaled_dot_product_cudnn_attention",
                      "stack.sdpa.pinned": "default", "stack.sdpa.attn_implementation": "sdpa",
                      "stack.sdpa.num_key_value_heads": "3", "stack.sdpa.enabled": "flash, math",
                      "stack.sdpa.cudnn_env": "TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED=1", "stack.sdpa.note": note}
    assert all(schema.is_fact(key) for key in params) and schema.observed_stack_params({}) == {}


def _observed(model, backend: str, mask):
    """The attention choice of one measured call of a process running `model` on a padded batch of two."""
    import torch

    from gpucost_mlflow.core.kinds.base import Work
    from gpucost_mlflow.core.kinds.settings import Settings
    from gpucost_mlflow.execution import attention

    settings = Settings(batch_size=2, precision="fp32", quantization="none", compile=False, attention="sdpa",
                        padding="longest", max_length=8, length_grouping="none", device="cpu", sdpa_backend=backend)

    def process(ids, texts, tokenizer, model, settings, device, on_batch=None):
        with torch.inference_mode():
            return model(input_ids=torch.ones(2, 5, dtype=torch.long), attention_mask=mask)

    work = attention.observed(Work(None, model, process, lambda outputs, pass_s: {}, None), settings,
                              torch.device("cpu"))
    work.process([], [], None, model, settings, torch.device("cpu"), lambda *shape: None)
    return work.utilisation(None, 1.0)["stack"]["sdpa"]


@pytest.mark.unit
def test_the_choice_is_torchs_for_the_first_measured_forward_and_follows_the_pin():
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertModel

    from gpucost_mlflow.execution import attention

    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                        vocab_size=50)
    padded = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    model = BertModel(config).eval()
    chosen = _observed(model, "default", padded)
    assert chosen["backend"] == "flash" and chosen["kernel"] == "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert chosen["attn_implementation"] == "sdpa" and chosen["num_key_value_heads"] == 2
    assert chosen["call"]["query"]["shape"] == [2, 2, 5, 16] and chosen["call"]["attn_mask"]["dtype"] == "bool"
    assert chosen["enabled"] == {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}
    pinned = _observed(model, "math", padded)
    assert pinned["backend"] == "math" and pinned["pinned"] == "math"
    assert pinned["enabled"] == {"flash": False, "mem_efficient": False, "math": True, "cudnn": False}
    with pytest.raises(GpucostError, match="sdpa_backend cudnn refused on cpu: No viable backend"):
        _observed(model, "cudnn", padded)
    eager = BertModel._from_config(config, attn_implementation="eager").eval()
    assert _observed(eager, "default", padded)["backend"] == attention.NONE
    with pytest.raises(GpucostError, match=r"sdpa_backend math pins .* the model's attention \(eager\) does not call"):
        _observed(eager, "math", padded)


@pytest.mark.integration
def test_a_pass_records_the_kernel_torch_chose_and_a_pinned_backend_the_cpu_refuses_fails_with_the_reason(
        store, corpus_dir, model_dir, protocol_file, tmp_path):
    variants = _variants(tmp_path, **{"batch8-math": {"sdpa_backend": "math"},
                                      "batch8-cudnn": {"sdpa_backend": "cudnn"}})
    corpus = corpus_dir / "comparison.jsonl"
    assert run_pass(corpus, model_dir, protocol_file, "batch8-math", variants=variants, experiment="math"
                    ).exit_code == 0
    run = only_run("math")
    params = run.data.params
    assert params["setting.sdpa_backend"] == "math" and params["stack.sdpa.pinned"] == "math"
    assert params["stack.sdpa.backend"] == "math" and params["stack.sdpa.enabled"] == "math"
    assert params["stack.sdpa.attn_implementation"] == "sdpa"
    manifest = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id,
                                                                   artifact_path=schema.MANIFEST)).read_text())
    assert manifest["settings"]["sdpa_backend"] == "math"
    assert manifest["stack"]["sdpa"]["kernel"] == "aten::_scaled_dot_product_attention_math"
    assert manifest["stack"]["sdpa"]["call"]["query"]["shape"][0] == 8  # the first measured batch

    result = run_pass(corpus, model_dir, protocol_file, "batch8-cudnn", variants=variants, experiment="cudnn")
    assert result.exit_code != 0
    failed = only_run("cudnn")
    assert failed.data.tags[schema.STATUS] == "failed"
    assert failed.data.tags[schema.STATUS_REASON].startswith(
        "error: GpucostError: sdpa_backend cudnn refused on cpu: No viable backend for scaled_dot_product_attention")
