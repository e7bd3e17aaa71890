"""The plumbing tests' classifier: a 2-layer, 32-wide BERT with all-MiniLM-L6-v2's tokenizer, fine-tuned by the demo's
trainer on the test slice's tuning corpus, made once per test session in about a second.

Most tests only need a pass that runs, exports, is judged and recorded; the real MiniLM encoder stays in the
tests about its own numbers (`minilm_dir`) and in the demo.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import LABELS

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}


def build_tiny_classifier(folder: Path, tuning: Path, seed: int = 0) -> Path:
    """A seeded tiny BERT base beside MiniLM's tokenizer, then fine-tuned on `tuning`; returns the model folder."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel
    from transformers.utils import logging as hf_logging

    from gpucost_mlflow.workloads.classification import training
    from gpucost_mlflow.workloads.minilm import base_model_dir

    hf_logging.set_verbosity_error()
    base, out = folder / "base", folder / "model"
    config = BertConfig.from_pretrained(str(base_model_dir()), **TINY)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        BertModel(config).save_pretrained(base)
    AutoTokenizer.from_pretrained(str(base_model_dir())).save_pretrained(base)
    rows = [json.loads(line) for line in tuning.read_text(encoding="utf-8").splitlines() if line.strip()]
    training.train_classifier(rows, LABELS, base, out, training.Hyperparameters(
        seed=seed, epochs=8, batch_size=8, learning_rate=3e-3, freeze_embeddings=False, frozen_layers=0))
    return out
