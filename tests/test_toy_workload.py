"""A new workload kind is one folder implementing core/kinds/base.py and one registry entry (docs/architecture.md,
"Adding a workload"): a toy kind outside the package, declared in the environment, runs a real pass end to end."""

from __future__ import annotations

import gzip
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.report.build import build
from gpucost_mlflow.tracking import schema
from tests.helpers import CATALOG, VARIANTS, attempts_table, evidence_of, run_pass, toy_launch

pytestmark = pytest.mark.integration

CHILD = '''
"""The toy kind in the pass's child: every input gets the first label, score 1.0, no model at all."""
from gpucost_mlflow.core.judging.verdicts import PREDICTIONS
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.workloads.classification import batches, records


def load(spec, device):
    labels = ["fresh", "plot", "rotten"]

    def process(ids, texts, tokenizer, model, settings, device, on_batch=None):
        done = batches.Predictions()
        for index, ident in enumerate(ids):
            done.ids.append(ident)
            done.labels.append(settings.label)  # the kind's own setting
            done.scores.append(1.0)
            if on_batch:
                on_batch(index + 1, index + 1)
        return done

    return Work(None, None, process, lambda outputs, pass_s: {"missing_measurements": {"useful_flop_per_s": "toy"}},
                lambda folder, outputs, duplicate_at: records.write_predictions(folder / PREDICTIONS, outputs,
                                                                               labels, duplicate_at))
'''
LAUNCH = toy_launch("toy")
SETTINGS = '''
"""The toy kind's own setting, declared beside the shared ones: which label every input gets."""
from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import settings


@dataclass(frozen=True)
class Settings(settings.Settings):
    label: int = 0  # the index of the label every input gets

    def __post_init__(self):
        if self.label not in (0, 1, 2):
            raise GpucostError(f"has label={self.label!r} (allowed: 0, 1, 2)")
'''


@pytest.fixture
def toy_kind(tmp_path, monkeypatch) -> Path:
    """The folder of a kind named `toy` (labels), on the path of this process and of the pass's child."""
    package = tmp_path / "plugins" / "toy_kind"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A toy workload kind."""\n')
    (package / "child.py").write_text(textwrap.dedent(CHILD))
    (package / "launch.py").write_text(textwrap.dedent(LAUNCH))
    (package / "settings.py").write_text(textwrap.dedent(SETTINGS))
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv("PYTHONPATH", str(package.parent) + ":" + ":".join(sys.path))
    monkeypatch.setenv("GPUCOST_WORKLOADS", "toy:labels:toy_kind")
    variants = tmp_path / "variants.yaml"
    defaults = VARIANTS.read_text().split("\nseries:")[0]  # the shipped defaults block, every field given
    variants.write_text(defaults + "\nvariants:\n  batch8: {batch_size: 8}\n  toy8: {batch_size: 8, workload: toy}\n"
                        "  toy8-rotten: {batch_size: 8, workload: toy, label: 2}\n")
    return variants


def test_a_toy_kind_runs_a_real_pass_judged_recorded_read_back_and_reported(store, toy_kind, corpus_dir, model_dir,
                                                                            protocol_file):
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "toy8", variants=toy_kind)
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "pass toy8: accepted" in result.output  # judged by the labels checks, as the built-in classifier is
    table = attempts_table("t")
    (row,) = table.to_dict("records")
    assert row["variant"] == "toy8" and row["workload"] == "toy" and row["status"] == "accepted"
    assert row["observed_ids"] == 30 and row["model_revision"] == "toy-1"
    run = MlflowClient().get_run(row["run_id"])
    assert run.data.params[schema.EXPORTED] == "predictions.jsonl.gz"
    built, _ = build(evidence_of("t"), load_protocol(protocol_file), protocol_file, load_catalog(CATALOG), load_variants(toy_kind))
    assert [a.configuration.variant for a in built.assessments] == ["toy8"]
    assert built.assessments[0].configuration.identity.workload == "toy"


def test_a_kind_declares_settings_of_its_own_which_only_its_variants_take(toy_kind, tmp_path):
    """The toy kind's record adds `label`: its variants take it (default 0) and it is recorded with the shared
    settings; a classifier variant naming it, or a toy variant giving it a value its record refuses, is refused."""
    variants = load_variants(toy_kind)
    assert variants["toy8"].settings.label == 0 and variants["toy8-rotten"].settings.label == 2
    assert variants["toy8-rotten"].settings.record()["label"] == 2 and "label" not in variants["batch8"].settings.record()
    assert variants["toy8-rotten"].settings.differing(variants["toy8"].settings) == ["label"]
    for line, refused in (("  batch8-label: {batch_size: 8, label: 2}\n", "variant 'batch8-label' has unknown field(s) label"),
                          ("  toy8-odd: {batch_size: 8, workload: toy, label: 7}\n", "variant 'toy8-odd' has label=7")):
        wrong = tmp_path / "wrong.yaml"
        wrong.write_text(toy_kind.read_text() + line)
        with pytest.raises(GpucostError, match=re.escape(refused)):
            load_variants(wrong)


def test_a_kinds_own_setting_reaches_its_child_and_the_run_params(store, toy_kind, corpus_dir, model_dir,
                                                                  protocol_file):
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "toy8-rotten", variants=toy_kind)
    assert result.exit_code == 0 or "rejected" in result.output, result.output + repr(result.exception)
    (row,) = attempts_table("t").to_dict("records")
    run = MlflowClient().get_run(row["run_id"])
    assert run.data.params["setting.label"] == "2"
    predictions = Path(MlflowClient().download_artifacts(row["run_id"], "predictions.jsonl.gz"))
    with gzip.open(predictions, "rt") as handle:
        assert {json.loads(line)["label"] for line in handle} == {"rotten"}
