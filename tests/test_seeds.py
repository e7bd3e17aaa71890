"""Seeds for stochastic work (issue 39, item 8; PROTOCOL.md §7): a protocol's seeds are run, kept and judged apart, and
the decision needs every seed; built-in workloads say they are deterministic."""

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
def test_a_two_seed_protocol_keeps_seeds_apart_and_decides_only_when_every_seed_holds(experiment, tmp_path):
    from gpucost_mlflow.report import scope
    from tests.scenario import RTX, lock_to, report
    from tests.test_report import protocol_like_shipped

    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="seeds: [0, 1]\n")
    lock_to(protocol)
    for hours in (10.0, 10.1, 10.2, 10.3, 10.4):
        experiment("batch8", RTX, hours * 3600, params={schema.SEED_TORCH: "0"})
        experiment("batch8", RTX, (hours + 5) * 3600, params={schema.SEED_TORCH: "1"})  # seed 1 is slower: apart
    built, _ = report(protocol_path=protocol)
    assert [(a.configuration.label, a.configuration.durations.median) for a in built.assessments] == [
        ("batch8 [seed 0]", 10.2 * 3600), ("batch8 [seed 1]", 15.2 * 3600)]  # never one median of ten
    assert built.decision.startswith(f"Decision: batch8 [seed 0] on {RTX}")
    assert scope.reproducible(built.attempts, built.reproduce, built.seeds)[0].startswith(
        "Seeds and deterministic flags: the protocol declares seeds 0, 1; every variant ran its passes at each")

    experiment("batch8", RTX, 15.0 * 3600, params={schema.SEED_TORCH: "1"}, status=Status.REJECTED,
               reason="macro_f1 0.61 < 0.80")
    after, _ = report(protocol_path=protocol)
    (seed0,) = [a for a in after.assessments if a.configuration.identity.seed == "0"]
    assert not seed0.feasible and seed0.feasibility == ("not every seed of the protocol holds (seed 1: 1 rejected "
                                                        "attempt(s) (a check failed))")
    assert after.decision.startswith("No decision: no configuration is feasible")


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
