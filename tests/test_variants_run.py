"""Every declared variant runs on the CPU path (device chosen at run time), predictions for every id."""

from __future__ import annotations

import time

import pytest

from gpucost_mlflow.core.variants import load_variants
from gpucost_mlflow.execution import runner
from tests.helpers import ROOT

pytestmark = pytest.mark.integration

VARIANTS = load_variants(ROOT / "projects" / "variants.yaml")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_declared_variant_completes_on_cpu(tmp_path, corpus_dir, model_dir, name):
    spec = runner.PassSpec(
        corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(model_dir),
        workdir=str(tmp_path), settings=VARIANTS[name].settings(),
    )
    outcome = runner.run(spec, time.perf_counter_ns())
    assert outcome["status"] == "completed", outcome.get("error")
    assert outcome["completed_entries"] == 30 and outcome["pass_s"] > 0
    assert outcome["device"] == "cpu"
    assert (tmp_path / runner.PREDICTIONS).exists()
