"""Seeds for stochastic work (issue 39, item 8; issue 52, point 6; PROTOCOL.md §7): a protocol's seeds are run and
judged apart, as repetitions of one configuration accepted only if every seed is and committed at its slowest seed's
plan; a python: workload receives the seed; built-in workloads say they are deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.campaign.schedule import rotated
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.tracking import schema
from tests.helpers import PROTOCOL_TEMPLATE, VARIANTS, cli_runner


@pytest.mark.unit
def test_every_variant_runs_at_every_seed_in_rotated_order():
    slots = rotated(["batch4", "batch8"], 2, (0, 1))
    assert [(s.round, s.variant, s.seed) for s in slots] == [
        (1, "batch4", 0), (1, "batch8", 0), (1, "batch4", 1), (1, "batch8", 1),
        (2, "batch8", 0), (2, "batch4", 1), (2, "batch8", 1), (2, "batch4", 0)]
    assert [s.seed for s in rotated(["batch8"], 2)] == [None, None]  # no seeds declared: seed 0, said by the report


@pytest.mark.unit
@pytest.mark.parametrize("value", ["[]", "[0, 0]", "[-1]", "[true]", "3", "[0.5]"])
def test_seeds_must_be_distinct_whole_numbers(tmp_path, value):
    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from tests.test_report import protocol_like_shipped

    with pytest.raises(GpucostError, match="field 'seeds' must list distinct whole numbers >= 0"):
        load_protocol(protocol_like_shipped(tmp_path, append=f"seeds: {value}\n"))


@pytest.mark.unit
def test_seeds_are_repetitions_committed_at_the_slowest_seeds_plan(experiment, tmp_path):
    from dataclasses import replace

    from gpucost_mlflow.core.measurement.stats import Durations
    from gpucost_mlflow.core.money.decision import assess_one
    from gpucost_mlflow.report import scope
    from tests.scenario import RTX, lock_to, report
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, expected=20, append="seeds: [0, 1]\n")
    lock_to(protocol)
    fast, slow = (10.0, 10.1, 10.2, 10.3, 10.4), (12.0, 12.1, 12.2, 12.3, 12.4)
    for hours_0, hours_1 in zip(fast, slow):
        experiment("batch8", RTX, hours_0 * 3600, params={schema.SEED_TORCH: "0"})
        experiment("batch8", RTX, hours_1 * 3600, params={schema.SEED_TORCH: "1"})  # seed 1 is slower
    built, _ = report(protocol_path=protocol)
    (one,) = built.assessments  # one configuration, never one per seed
    assert one.configuration.label == "batch8" and one.configuration.identity.seed == "0,1"
    assert sorted(one.configuration.durations.values) == sorted(h * 3600 for h in fast + slow)
    assert one.feasible and one.stable and built.decision.startswith(f"Decision: batch8 on {RTX}")
    assert one.forecast.per_deliverable_h[2] == pytest.approx((12.4 * 3600 + 0.3) / 3600)  # its slowest seed's pass
    alone = {seed: assess_one(replace(one.configuration, durations=Durations(tuple(h * 3600 for h in hours))), one.rules)
             for seed, hours in (("0", fast), ("1", slow))}
    assert one.plan == alone["1"].plan  # the slowest seed's plan, not the fastest's
    assert (str(one.committed), str(alone["0"].committed)) == ("330.00", "220.00")
    assert len(built.measured.rows_of(one.configuration)) == 10
    assert (f"batch8 on {RTX} ran at seeds 0, 1: one configuration, committed at its slowest seed's passes (seed 0 5 "
            "pass(es), median 36,720.000 s; seed 1 5 pass(es), median 43,920.000 s)") in built.warnings
    assert scope.reproducible(built.attempts, built.reproduce, built.seeds)[0].startswith(
        "Seeds and deterministic flags: the protocol declares seeds 0, 1; every variant ran its passes at each")


@pytest.mark.unit
def test_a_configuration_is_accepted_only_if_every_seed_is(experiment, tmp_path):
    from tests.scenario import RTX, lock_to, report
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="seeds: [0, 1, 2]\n")
    lock_to(protocol)
    for hours in (10.0, 10.1, 10.2, 10.3, 10.4):
        experiment("batch8", RTX, hours * 3600, params={schema.SEED_TORCH: "0"})
        experiment("batch8", RTX, hours * 3600, params={schema.SEED_TORCH: "1"})
    experiment("batch8", RTX, 10.0 * 3600, params={schema.SEED_TORCH: "1"}, status=Status.REJECTED,
               reason="macro_f1 0.61 < 0.80")
    built, _ = report(protocol_path=protocol)
    (one,) = built.assessments  # seed 0 holds alone: it does not stand for seeds 1 and 2
    assert not one.feasible and one.feasibility == ("not every seed of the protocol holds (seed 1: 1 rejected "
                                                    "attempt(s) (a check failed); seed 2: no pass)")
    assert built.decision.startswith("No decision: no configuration is feasible")


@pytest.mark.unit
def test_a_python_workload_receives_the_seed_and_numpy_and_random_are_seeded(tmp_path):
    import random
    import sys

    import numpy

    from gpucost_mlflow.core.inputs.variants import get_variant
    from gpucost_mlflow.execution.runner import PassSpec
    from gpucost_mlflow.workloads.user_code import child
    from gpucost_mlflow.workloads.user_code.workload import Workload
    from tests.helpers import VARIANTS

    code = tmp_path / "seeded_user_workload.py"
    code.write_text("import random\n\nimport numpy\n\n\ndef load(settings, device, seed):\n"
                    "    return {'seed': seed, 'random': random.random(), 'numpy': float(numpy.random.random())}\n\n\n"
                    "def infer(state, texts):\n    return [{'label': 'plot'} for _ in texts]\n", encoding="utf-8")
    spec = PassSpec(corpus_path="", model_path=str(tmp_path), workdir=str(tmp_path),
                    workload=Workload("python:x", "python", "labels", code=str(code)),
                    settings=get_variant(VARIANTS, "batch8").settings, seed=3)
    random.seed(99)
    numpy.random.seed(99)
    try:
        state = child.load(spec, "cpu").model
    finally:  # where the child failed before it put the folder on the path (no torch here), nothing to undo
        sys.modules.pop(code.stem, None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))
    assert state == {"seed": 3, "random": random.Random(3).random(), "numpy": numpy.random.RandomState(3).random()}
    assert child.seed_argument(lambda settings, device: None, 3) == {}  # load(settings, device): called as before


@pytest.mark.integration
def test_a_seeded_campaign_runs_each_seed_and_judges_bf16_against_the_reference_at_its_seed(store, corpus_dir,
                                                                                         model_dir, tmp_path):
    from gpucost_mlflow.cli import main

    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(PROTOCOL_TEMPLATE.format(threshold=0.0, max_diff=0.05, min_agreement=0.8).replace(
        "passes_per_variant: 5", "passes_per_variant: 1") + "seeds: [0, 1]\n")
    result = cli_runner().invoke(main, ["campaign", "--variants", "batch8,batch8-bf16", "--passes", "1",
                                        "--experiment", "t", "--corpus", str(corpus_dir / "comparison.jsonl"),
                                        "--model", str(model_dir), "--variants-file", str(VARIANTS),
                                        "--protocol", str(protocol)])
    assert result.exit_code == 0, result.output
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("t").experiment_id],
                              f"tags.`{schema.VARIANT}` != ''", order_by=["attributes.start_time ASC"])
    seen = [(r.data.tags[schema.VARIANT], r.data.params[schema.SEED_TORCH], r.data.tags[schema.STATUS]) for r in runs]
    assert seen == [("batch8", "0", "accepted"), ("batch8-bf16", "0", "accepted"), ("batch8", "1", "accepted"),
                    ("batch8-bf16", "1", "accepted")]
    references = {r.data.params[schema.SEED_TORCH]: r.info.run_id for r in runs if r.data.tags[schema.VARIANT] == "batch8"}
    for run in runs:
        if run.data.tags[schema.VARIANT] == "batch8-bf16":
            verdict = json.loads(Path(mlflow.artifacts.download_artifacts(
                run_id=run.info.run_id, artifact_path=schema.VERDICT)).read_text())
            assert references[run.data.params[schema.SEED_TORCH]] in json.dumps(verdict)  # its own seed's reference
            manifest = json.loads(Path(mlflow.artifacts.download_artifacts(
                run_id=run.info.run_id, artifact_path=schema.MANIFEST)).read_text())
            assert manifest["seeds"]["torch"] == int(run.data.params[schema.SEED_TORCH])
            assert manifest["seeds"]["workload_deterministic"] is True
