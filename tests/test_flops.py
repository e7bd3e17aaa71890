"""Model FLOPs utilisation (issue 9): forward FLOPs from the config and real token counts, padding apart."""

from __future__ import annotations

import json

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.measurement.flops import rates
from gpucost_mlflow.workloads.encoder_flops import EncoderShape, count, encoder_shape, sequence_flops

pytestmark = pytest.mark.unit

TINY = EncoderShape(hidden=4, layers=1, intermediate=8, heads=2, labels=3)


def test_sequence_flops_match_a_hand_count_of_every_matrix_multiply():
    # 3 tokens, hidden 4, one layer, feed-forward 8, two heads of 2, three labels; 2 x multiply-accumulates each.
    projections = 4 * (2 * 3 * 4 * 4)                  # Q, K, V, output: (3x4) @ (4x4)
    feed_forward = 2 * 3 * 4 * 8 + 2 * 3 * 8 * 4        # (3x4) @ (4x8), (3x8) @ (8x4)
    scores = 2 * (2 * 3 * 3 * 2)                        # per head (3x2) @ (2x3)
    context = 2 * (2 * 3 * 3 * 2)                       # per head (3x3) @ (3x2)
    pooler = 2 * 1 * 4 * 4                              # first token (1x4) @ (4x4)
    classifier = 2 * 1 * 4 * 3                          # (1x4) @ (4x3)
    assert sequence_flops(TINY, 3) == projections + feed_forward + scores + context + pooler + classifier == 968


def test_padded_flops_count_padding_tokens_apart():
    flops = count(TINY, [[3, 5], [2]])
    assert flops.useful == sequence_flops(TINY, 3) + sequence_flops(TINY, 5) + sequence_flops(TINY, 2)
    assert flops.padded == 2 * sequence_flops(TINY, 5) + sequence_flops(TINY, 2)
    assert (flops.real_tokens, flops.padded_tokens, flops.sequences, flops.batches) == (10, 12, 3, 2)
    assert 0 < flops.padding_share < 1


def test_a_batch_without_padding_has_equal_useful_and_padded_flops():
    flops = count(TINY, [[4, 4, 4]])
    assert flops.useful == flops.padded and flops.padding_share == 0


def test_minilm_shape_from_its_config():
    """The shipped all-MiniLM-L6-v2 config, with the 3-label head the demo classifier adds (its id2label)."""
    from gpucost_mlflow.workloads.minilm import base_model_dir

    config = json.loads((base_model_dir() / "config.json").read_text())
    shape = encoder_shape({**config, "id2label": {"0": "fresh", "1": "plot", "2": "rotten"}})
    assert shape == EncoderShape(hidden=384, layers=6, intermediate=1536, heads=12, labels=3)


def test_a_config_that_is_not_bert_style_is_a_one_line_error():
    with pytest.raises(GpucostError, match="BERT-style"):
        encoder_shape({"d_model": 512, "num_layers": 6})


def test_utilisation_is_left_out_without_a_measured_peak():
    flops = count(TINY, [[3, 5]])
    without = rates(flops, 2.0, None)
    assert without["useful_flop_per_s"] == flops.useful / 2 and without["padded_flop_per_s"] == flops.padded / 2
    assert "mfu_useful" not in without and "mfu_padded" not in without and "peak_flop_per_s" not in without
    measured = rates(flops, 2.0, 1e3)
    assert measured["mfu_useful"] == pytest.approx(flops.useful / 2 / 1e3)
    assert measured["mfu_padded"] >= measured["mfu_useful"]


def test_the_count_agrees_with_torch_flop_counter_on_the_real_encoder(minilm_dir):
    """The hand formula against torch's own count of the matrix multiplies the model really runs."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(minilm_dir), attn_implementation="eager").eval()
    shape = encoder_shape(model.config.to_dict())
    ids = torch.randint(1000, 2000, (2, 17))
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # second row: 9 real tokens, padded to 17
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(input_ids=ids, attention_mask=mask)
    assert counter.get_total_flops() == count(shape, [[17, 9]]).padded
