"""Lanes: one pass over several devices at once, each lane a fixed slice of the corpus (docs/pass.md, "Lanes")."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import random
from decimal import Decimal
from pathlib import Path

import mlflow
import pytest
import yaml

from gpucost_mlflow.cli.progress import CampaignProgress
from gpucost_mlflow.core.campaign.schedule import rotated
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging.verdicts import PREDICTIONS
from gpucost_mlflow.core.measurement import lanes as rules
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.core.money.decision import Rules, assess
from gpucost_mlflow.execution import lanes
from gpucost_mlflow.execution.batch_counter import BatchCounter
from gpucost_mlflow.execution.outcome import Counted, PassOutcome, Timings
from gpucost_mlflow.report.configurations import configurations
from gpucost_mlflow.report.measured import ReportAttempts
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.attempts_table import COLUMNS, attempt_of_row
from tests.helpers import CATALOG, only_run, run_pass

ROWS = [{"id": f"r{n:03d}", "text": f"text {n}", "label": "fresh", "bucket": "short"} for n in range(31)]


@pytest.mark.unit
def test_slices_deal_sorted_ids_round_robin_and_keep_the_file_order():
    parts = rules.slices(ROWS, 3)
    assert [len(p) for p in parts] == [11, 10, 10]
    assert [r["id"] for r in parts[1]][:3] == ["r001", "r004", "r007"]
    assert sorted(r["id"] for p in parts for r in p) == [r["id"] for r in ROWS]


@pytest.mark.unit
def test_slices_depend_on_the_ids_never_on_the_file_order():
    shuffled = ROWS[:]
    random.Random(7).shuffle(shuffled)
    again = rules.slices(shuffled, 2)
    assert [{r["id"] for r in p} for p in again] == [{r["id"] for r in p} for p in rules.slices(ROWS, 2)]
    order = {r["id"]: i for i, r in enumerate(shuffled)}
    assert all([order[r["id"]] for r in p] == sorted(order[r["id"]] for r in p) for p in again)
    record = rules.record(again, ["cpu", "cpu"], ["x", "x"], 1, "clock")
    assert record["slices"][0]["fingerprint"] == rules.record(rules.slices(ROWS, 2), ["cpu"] * 2, ["x"] * 2, 1,
                                                              "clock")["slices"][0]["fingerprint"]


@pytest.mark.unit
def test_a_lanes_pass_counts_the_batches_of_every_slice():
    assert rules.batches(31, 8) == 4
    assert rules.batches(31, 8, lanes=2) == 2 + 2  # slices of 16 and 15
    assert rules.batches(31, 8, lanes=3) == 2 + 2 + 2  # 11, 10, 10
    assert rules.batches(3, 8, lanes=4) == 3  # one lane has nothing to do
    assert rules.batches(31, 8, lanes=2) == sum(-(-len(part) // 8) for part in rules.slices(ROWS, 2))


@pytest.mark.unit
def test_campaign_progress_shows_the_lanes_batches_added_up(tmp_path):
    progress = CampaignProgress(io.StringIO())
    display = progress.display()
    display.on_plan("c1", 1, 1)
    display.on_pass_start(rotated(["batch8-lanes2"], 1)[0], rules.batches(31, 8, lanes=2), None)
    display.on_child_start(tmp_path)
    assert ", batch 0/4" in progress.line()  # the lanes are loading: no counter yet
    for lane, (number, done) in enumerate([(3, 16), (2, 8)]):
        folder = lanes.folder(tmp_path, lane)
        folder.mkdir()
        BatchCounter(folder).record(number, done)
    assert ", batch 3/4" in progress.line()
    progress.close()


@pytest.mark.unit
def test_pass_time_runs_from_the_first_lane_start_to_the_last_lane_end():
    assert rules.span_s([(1_000_000_000, 3_000_000_000), (1_500_000_000, 3_500_000_000)]) == 2.5
    assert rules.span_s([(1, 2), (None, None)]) is None


@pytest.mark.unit
def test_energy_adds_up_only_when_every_lane_measured_it():
    both, _ = rules.combine_metrics([{"energy_j": 10.0}, {"energy_j": 12.5}], [{}, {}], 2.0)
    assert both["energy_j"] == 22.5
    one, missing = rules.combine_metrics([{"energy_j": 10.0}, {}], [{}, {"energy_j": "no counter on this board"}], 2.0)
    assert "energy_j" not in one and missing["energy_j"] == "lane 1: no counter on this board"


@pytest.mark.unit
def test_flop_rates_are_recounted_over_the_span_and_mfu_against_both_devices():
    lane = {"flops_useful": 6e12, "flops_padded": 8e12, "tokens_real": 100.0, "tokens_padded": 120.0,
            "padding_share": 0.25, "useful_flop_per_s": 6e12, "padded_flop_per_s": 8e12, "peak_flop_per_s": 1e14,
            "mfu_useful": 0.06, "mfu_padded": 0.08, "prefill_s": 5.0}
    metrics, missing = rules.combine_metrics([lane, dict(lane)], [{}, {}], 2.0)
    assert metrics["flops_useful"] == 12e12 and metrics["useful_flop_per_s"] == 6e12
    assert metrics["peak_flop_per_s"] == 2e14 and metrics["mfu_useful"] == pytest.approx(0.03)
    assert metrics["padding_share"] == pytest.approx(0.25)
    assert "prefill_s" not in metrics and "not combined over lanes" in missing["prefill_s"]


@pytest.mark.unit
def test_a_failed_lane_fails_the_pass_named_and_the_completed_counts_add_up(tmp_path):
    for lane, ids in enumerate((["a", "b"], ["c"])):
        folder = lanes.folder(tmp_path, lane)
        folder.mkdir()
        with gzip.open(folder / PREDICTIONS, "wt") as out:
            out.writelines(json.dumps({"id": i, "label": "fresh", "score": 0.5}) + "\n" for i in ids)
    done = PassOutcome(status="completed",
                       timings=Timings(pass_s=1.0, clock_started_ns=10, clock_stopped_ns=20, export_s=0.1),
                       measured=Counted(completed_entries=2, memory_peaks={"mem_peak_allocated_bytes": 5.0}))
    oom = PassOutcome(reason="out of memory: CUDA out of memory",
                      timings=Timings(clock_started_ns=12, clock_stopped_ns=15, export_s=0.1),
                      measured=Counted(completed_entries=1, memory_peaks={"mem_peak_allocated_bytes": 9.0}))
    merged = lanes.merge([done, oom], tmp_path, interrupted=False)
    assert merged.status == "failed" and merged.timings.pass_s is None
    assert merged.reason == "out of memory: CUDA out of memory (lane 1 of 2)"
    assert merged.measured.completed_entries == 3
    assert merged.measured.memory_peaks == {"mem_peak_allocated_bytes": 9.0}
    assert merged.timings.elapsed_until_failure_s == pytest.approx(5e-9)
    assert [record["lane"] for record in merged.lanes] == [0, 1]
    with gzip.open(tmp_path / PREDICTIONS, "rt") as back:
        assert [json.loads(line)["id"] for line in back] == ["a", "b", "c"]


@pytest.mark.unit
def test_lanes_is_a_positive_whole_number_listed_only_when_a_pass_splits(tmp_path):
    path = tmp_path / "variants.yaml"
    document = {"defaults": yaml.safe_load((Path(__file__).parents[1] / "projects" / "variants.yaml").read_text())
                ["defaults"], "variants": {"batch8": {}, "batch8-lanes2": {"lanes": 2}},
                "series": {"lanes": {"field": "lanes", "reference": "batch8", "variants": ["batch8-lanes2"]}}}
    path.write_text(yaml.safe_dump(document))
    variants = load_variants(path)
    assert "lanes" not in variants["batch8"].settings.record()
    assert variants["batch8-lanes2"].settings.record()["lanes"] == 2
    for wrong in (0, "2", True):
        document["variants"]["batch8-lanes2"] = {"lanes": wrong}
        path.write_text(yaml.safe_dump(document))
        with pytest.raises(GpucostError, match="lanes as a positive whole number"):
            load_variants(path)


def _attempts(*configs: tuple[str, str, str, int]) -> ReportAttempts:
    """Three accepted attempts per (variant, device, backend, lanes), as the reader reads them back."""
    found = []
    for variant, device, backend, count in configs:
        for n in range(3):
            found.append(attempt_of_row(Identity(device, variant, "classification", str(count)), {
                **dict.fromkeys(COLUMNS), "run_id": f"{len(found):032x}", "variant": variant, "device": device,
                "backend": backend, "role": "benchmark", "status": "accepted", "lanes": count,
                "workload": "classification", "pass_s": 100.0 + n, "load_s": 5.0, "warmup_s": 1.0,
                "eval_s": 1.0, "export_s": 1.0, "wall_s": 110.0 + n}))
    return ReportAttempts.of(found)


@pytest.mark.unit
def test_the_report_prices_a_two_lane_configuration_as_two_gpus():
    measured = _attempts(("batch8", "NVIDIA B200", "cuda", 1), ("batch8-lanes2", "NVIDIA B200", "cuda", 2),
                      ("batch8-lanes2", "NVIDIA GeForce RTX 4090", "cuda", 2), ("batch8-lanes2", "cpu", "cpu", 2))
    configs = {(c.variant, c.device): c for c in configurations(measured)}
    assert configs["batch8", "NVIDIA B200"].gpus == 1 and configs["batch8-lanes2", "NVIDIA B200"].gpus == 2
    assert configs["batch8-lanes2", "cpu"].gpus == 1  # CPU lanes share one machine
    plan = {"start": dt.datetime(2026, 11, 30, 9, tzinfo=dt.timezone.utc), "setup_hours": 4, "waiting_hours": 0,
            "planned_restarts": 1}
    assessed = {(a.configuration.variant, a.configuration.device): a.plan
                for a in assess(list(configs.values()), Rules(load_catalog(CATALOG), plan, None, 1))}
    one_lane, two_lanes = assessed["batch8", "NVIDIA B200"], assessed["batch8-lanes2", "NVIDIA B200"]
    assert (one_lane.gpus, one_lane.lots, one_lane.unused_gpus) == (1, 1, 1)
    assert (two_lanes.gpus, two_lanes.lots, two_lanes.unused_gpus) == (2, 1, 0)
    rtx = assessed["batch8-lanes2", "NVIDIA GeForce RTX 4090"]
    assert rtx.lots == 2 and rtx.total == 2 * Decimal("110.00")  # one card per lot: two lots


@pytest.mark.integration
def test_a_two_lane_pass_on_the_cpu_is_one_run_over_the_whole_corpus(store, corpus_dir, model_dir, protocol_file,
                                                                     tmp_path):
    shipped = yaml.safe_load((Path(__file__).parents[1] / "projects" / "variants.yaml").read_text())
    variants = tmp_path / "variants.yaml"
    variants.write_text(yaml.safe_dump({"defaults": shipped["defaults"],
                                        "variants": {"batch8": {}, "batch8-lanes2": {"lanes": 2}}}))
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol_file, "batch8-lanes2", variants=variants)
    assert result.exit_code == 0, result.output

    run = only_run()
    metrics = run.data.metrics
    assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] == "accepted"
    assert run.data.params["setting.lanes"] == "2"
    assert metrics["expected_ids"] == metrics["observed_ids"] == metrics["completed_entries"] == 30

    folder = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="", dst_path=str(tmp_path)))
    manifest = json.loads((folder / schema.MANIFEST).read_text())
    assert [s["size"] for s in manifest["lanes"]["slices"]] == [15, 15]
    assert manifest["lanes"]["threads_per_lane"] >= 1
    recorded = json.loads((folder / schema.VERDICT).read_text())["lanes"]
    assert [lane["status"] for lane in recorded] == ["completed", "completed"]
    assert sum(lane["completed_entries"] for lane in recorded) == 30
    stopped_ns = max(lane["clock_stopped_ns"] for lane in recorded)
    span = (stopped_ns - min(lane["clock_started_ns"] for lane in recorded)) / 1e9
    assert metrics["pass_s"] == pytest.approx(span, rel=1e-4)  # as logged: five significant digits (core/names.shown)
    assert all(metrics["pass_s"] >= lane["pass_s"] * (1 - 1e-4) for lane in recorded)
    with gzip.open(folder / schema.PREDICTIONS, "rt") as back:
        ids = [json.loads(line)["id"] for line in back]
    assert len(ids) == 30 and set(ids) == {json.loads(line)["id"] for line in (corpus_dir / "comparison.jsonl").open()}


@pytest.mark.unit
def test_each_gpu_lane_sees_its_own_visible_gpu_and_a_share_of_the_threads(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: "NVIDIA H200")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 16)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    plan = lanes.layout(2, torch.device("cuda"))
    assert plan.devices == ("cuda:0", "cuda:1") and plan.threads == 8
    assert plan.env(1) == {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "8", "RAYON_NUM_THREADS": "8",
                           "CUDA_VISIBLE_DEVICES": "3"}


@pytest.mark.unit
def test_more_lanes_than_gpus_is_refused_before_anything_is_recorded(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(GpucostError, match="runs 2 lanes, one GPU each, but torch sees 1 GPU"):
        lanes.layout(2, torch.device("cuda"))
