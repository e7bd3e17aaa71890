"""Every declared variant runs on the CPU path (device chosen at run time), predictions for every id."""

from __future__ import annotations

import time

import pytest

from gpucost_mlflow.core.inputs import workloads
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging.verdicts import PREDICTIONS
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.kinds.workload import WorkloadRecord
from gpucost_mlflow.execution import runner
from gpucost_mlflow.workloads.embeddings import output as embedding_verdicts
from tests.helpers import ROOT

pytestmark = pytest.mark.integration

SHIPPED = ROOT / "projects" / "variants.yaml"
VARIANTS = load_variants(SHIPPED)
# Generation variants need a causal LM and the protocol's prompt and token budget: tests/test_generation.py runs them.
# Variants on another engine than torch need the launcher's engine record: tests/test_engines.py runs them end to end.
ENCODER_VARIANTS = sorted(name for name, variant in VARIANTS.items()
                          if workloads.parse(variant.settings.workload, SHIPPED.parent).kind != "generation"
                          and variant.settings.engine == "torch")


@pytest.mark.parametrize("name", ENCODER_VARIANTS)
def test_each_declared_variant_completes_on_cpu(tmp_path, corpus_dir, model_dir, name):
    workload = workloads.parse(VARIANTS[name].settings.workload, SHIPPED.parent)
    spec = runner.PassSpec(
        corpus_path=str(corpus_dir / "comparison.jsonl"), model_path=str(model_dir),
        workdir=str(tmp_path), settings=VARIANTS[name].settings,
        implementation=registry.implementation(VARIANTS[name].settings), 
        workload=WorkloadRecord(workload.declared, workload.kind, workload.output).extended(
            registry.kind(workload.kind).workload_record(), **({"code": workload.module or workload.source}
                                                               if workload.kind == "python" else {})),
    )
    outcome = runner.run(spec, time.perf_counter_ns())
    assert outcome.status == "completed", outcome.error
    assert outcome.measured.completed_entries == 30 and outcome.timings.pass_s > 0
    assert outcome.device == "cpu"
    exported = embedding_verdicts.EMBEDDINGS if workload.output == embedding_verdicts.NAME else PREDICTIONS
    assert (tmp_path / exported).exists()
