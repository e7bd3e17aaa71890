"""benchmarks/device_check.sh: the whole check with --small on the CPU, and its GPU-only checks on recorded runs."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.measurement.energy import DEVICE_UUID_TAG, ENERGY_METRIC
from gpucost_mlflow.execution.timing import DEVICE_EVENT_METRIC
from gpucost_mlflow.tracking import schema
from tests.helpers import ROOT, load_benchmark

SCRIPT = ROOT / "benchmarks" / "device_check.sh"
device_check = load_benchmark("device_check")
H200_BYTES = 143771 * 2**20


def _script(*args: str, out, timeout: int = 600) -> subprocess.CompletedProcess:
    """The script as a user runs it, with this interpreter as its Python and OUT set."""
    env = dict(os.environ, OUT=str(out), GPUCOST_PYTHON=sys.executable)
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.mark.integration
@pytest.mark.ci_step  # about 80 s on 2 cores: its own CI step keeps `make test` within its budget
def test_small_device_check_passes_on_the_cpu_and_keeps_everything_under_out(tmp_path, plain_child_start):
    """Every pass of it starts its child as the product does (no fork server): the CPU path end to end."""
    result = _script("--small", out=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    summary = (tmp_path / "summary.txt").read_text()
    assert summary == result.stdout
    for step in ("corpus", "model", "doctor", "campaign", "campaign-check", "oom-pass", "oom-check", "report-check"):
        assert f"PASS {step} " in summary
    assert "injected (CPU), GPUCOST_FAULT=oom@2" in summary
    assert "SKIP gpu-measurements" in summary
    assert "PASS lanes-check" in summary or "SKIP lanes" in summary
    assert summary.splitlines()[-1].startswith("device_check: ") and " 0 failed, " in summary.splitlines()[-1]
    assert (tmp_path / "mlflow.db").is_file() and (tmp_path / "report" / "report.md").is_file()


@pytest.mark.integration
def test_full_device_check_refuses_a_machine_without_gpu_in_one_line(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here: the full check would run")
    result = _script(out=tmp_path, timeout=120)
    assert result.returncode == 2
    assert "no GPU visible" in result.stdout and "--small" in result.stdout


@pytest.mark.integration
def test_an_unknown_argument_stops_the_script_before_anything_runs(tmp_path):
    result = _script("--smal", out=tmp_path / "never", timeout=30)
    assert result.returncode == 2 and "unknown argument '--smal'" in result.stderr
    assert not (tmp_path / "never").exists()


@pytest.mark.unit
def test_the_oversized_batch_needs_more_than_an_h200_for_its_attention_scores_alone():
    batch = device_check.oversized_batch(H200_BYTES, heads=12, length=512)
    assert batch == 16384
    assert batch * 12 * 512 * 512 * 4 > H200_BYTES
    assert (batch // 2) * 12 * 512 * 512 * 4 <= 1.25 * H200_BYTES


@pytest.mark.unit
def test_the_full_checks_protocol_keeps_the_shipped_bars_but_a_bucket_bar_its_corpus_can_show(tmp_path, corpus_dir):
    """The shipped protocol's 0.60 per bucket rejected the fp32 reference on the 1,000-input corpus (an H200, on
    2026-12-04) and every check after it with it: the full check takes the demo protocol's bucket bar, which the
    shipped protocol itself declares since 2026-12-05 (issue 61), so it never asks more than its corpus shows."""
    import yaml

    out = tmp_path / "protocol.yaml"
    demo = ROOT / "projects" / "protocol-demo.yaml"
    said = device_check.protocol_copy(argparse.Namespace(
        source=ROOT / "projects" / "protocol.yaml", corpus=corpus_dir / "comparison.jsonl", out=out, passes=2,
        any_quality=False, bucket_bar_of=demo, guards=False))
    written = yaml.safe_load(out.read_text(encoding="utf-8"))["acceptance"]
    shipped = yaml.safe_load((ROOT / "projects" / "protocol.yaml").read_text(encoding="utf-8"))["acceptance"]
    bar = yaml.safe_load(demo.read_text(encoding="utf-8"))["acceptance"]["per_bucket_threshold"]
    assert written["per_bucket_threshold"] == bar <= shipped["per_bucket_threshold"]
    assert written["threshold"] == shipped["threshold"] and written["reference"] == shipped["reference"]
    assert f"per-bucket bar {bar:g} as protocol-demo.yaml" in said and said.split(": ", 1)[1] in out.read_text(encoding="utf-8")


def _pass(client: MlflowClient, experiment_id: str, variant: str, backend: str, metrics: dict, tags: dict = ()):
    run = client.create_run(experiment_id, tags={schema.VARIANT: variant, schema.BACKEND: backend, **dict(tags)})
    for key, value in metrics.items():
        client.log_metric(run.info.run_id, key, value)
    client.set_terminated(run.info.run_id, "FINISHED")


def _measurements(experiment: str) -> tuple[int, str]:
    args = argparse.Namespace(experiment=experiment)
    try:
        return 0, device_check.check_device_measurements(args)
    except device_check.CheckFailed as exc:
        return 1, str(exc)


@pytest.mark.unit
def test_gpu_passes_need_event_time_uuid_and_energy_unless_shorter_than_the_counter(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("gpu")
    uuid = {DEVICE_UUID_TAG: "GPU-0123"}
    _pass(client, experiment_id, "batch8", "cuda", {"pass_s": 0.8, DEVICE_EVENT_METRIC: 0.79, ENERGY_METRIC: 410.0},
          uuid)
    _pass(client, experiment_id, "batch8-bf16", "cuda", {"pass_s": 0.05, DEVICE_EVENT_METRIC: 0.049},
          {**uuid, schema.MISSING_PREFIX + ENERGY_METRIC: "pass of 0.050 s is shorter than the nvml counter's period"})
    code, line = _measurements("gpu")
    assert code == 0, line
    assert "energy_j on 1" in line

    _pass(client, experiment_id, "batch4", "cuda", {"pass_s": 1.2},
          {schema.MISSING_PREFIX + ENERGY_METRIC: "CUDA pass without an energy counter: pynvml is not installed"})
    code, line = _measurements("gpu")
    assert code == 1
    assert "pynvml is not installed" in line and f"no {DEVICE_EVENT_METRIC}" in line and DEVICE_UUID_TAG in line


@pytest.mark.unit
def test_the_guards_check_wants_a_clock_of_min_measured_s_identical_repetitions_and_the_board_read(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("guarded")
    board = {"cooldown_waited_s": 1.0, "device_temperature_c_at_start": 41.0, "device_temperature_c_at_end": 55.0,
             "other_gpu_processes": 0.0, "gpu_utilisation": 0.93}
    _pass(client, experiment_id, "batch8", "cuda", {"pass_s": 0.25, "repetitions": 9.0, "measured_total_s": 2.25,
                                                    "repetitions_identical": 1.0, **board},
          {schema.MISSING_PREFIX + "idle_power_w": "NVML total energy counter not supported here",
           schema.THROTTLED: "software power cap (at end)"})
    args = argparse.Namespace(experiment="guarded")
    line = device_check.check_guards(args)
    assert "1 GPU passes guarded, repeated on 1 (9-9 times)" in line and "software power cap" in line

    _pass(client, experiment_id, "batch1", "cuda", {"pass_s": 1.5, "repetitions": 1.0, "measured_total_s": 1.5,
                                                    **board})
    with pytest.raises(device_check.CheckFailed, match="measured_total_s 1.5 < 2.*no idle_power_w and no reason"):
        device_check.check_guards(args)


@pytest.mark.unit
def test_passes_on_the_cpu_never_satisfy_the_gpu_check(store):
    client = MlflowClient()
    _pass(client, client.create_experiment("cpu"), "batch8", "cpu", {"pass_s": 3.0})
    code, line = _measurements("cpu")
    assert code == 1 and "no completed pass ran on a GPU" in line


@pytest.mark.unit
def test_the_oom_check_tells_a_real_out_of_memory_from_an_injected_one(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("oom")
    run = client.create_run(experiment_id, tags={
        schema.VARIANT: "oversized", schema.STATUS: "failed",
        schema.STATUS_REASON: "out of memory: injected by GPUCOST_FAULT=oom@2"})
    client.log_metric(run.info.run_id, "completed_entries", 8)
    client.set_terminated(run.info.run_id, "FAILED")
    assert "injected out of memory" in device_check.check_oom(
        argparse.Namespace(experiment="oom", injected=True, variants_file=None))
    with pytest.raises(device_check.CheckFailed, match="injected, a real one was expected"):
        device_check.check_oom(argparse.Namespace(experiment="oom", injected=False, variants_file=None))
