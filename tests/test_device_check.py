"""benchmarks/device_check.sh: the whole check with --small on the CPU, and its GPU-only checks on recorded runs."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.measurement.energy import DEVICE_UUID_TAG, ENERGY_METRIC
from gpucost_mlflow.execution.timing import DEVICE_EVENT_METRIC
from gpucost_mlflow.tracking import schema
from tests.helpers import ROOT, load_benchmark

SCRIPT = ROOT / "benchmarks" / "device_check.sh"
RUN_SCRIPT = ROOT / "benchmarks" / "device_run.sh"
device_check = load_benchmark("device_check")
device_bundle = load_benchmark("device_bundle")
cold_warm = load_benchmark("cold_warm")
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
    for step in ("corpus", "model", "doctor", "cold-warm", "variants", "campaign", "campaign-check", "oom-pass",
                 "oom-check", "report-check"):
        assert f"PASS {step} " in summary
    assert "injected (CPU), GPUCOST_FAULT=oom@2" in summary
    assert "SKIP gpu-measurements" in summary and "SKIP gpu-stack" in summary
    assert "cold/warm over 4 widths at batch 8: default " in summary and "fp32 on a CPU" in (
        tmp_path / "logs" / "cold-warm.log").read_text()
    assert [line.split()[-1] for line in summary.splitlines() if line.startswith("PASS variants ")] == [
        ",".join(_expected(8, gpu=False))]
    assert "SKIP batch8-bf16-nocudnn " in summary  # cuDNN is a GPU's
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


def _expected(size: int, gpu: bool) -> list[str]:
    """The check's variants at one batch size: the cuDNN-off one on a GPU and the padded one where this checkout
    declares their settings (two engineers add them beside this check)."""
    fields = device_check._declared_fields()
    return [f"batch{size}", f"batch{size}-bf16"] + [f"batch{size}-bf16-{suffix}" for suffix, name, wanted in (
        ("nocudnn", "sdpa_backend", gpu), ("pad32", "pad_to_multiple_of", True)) if wanted and name in fields]


def _variants(tmp_path, corpus_dir, backend: str, memory_bytes: int = 0, model=None) -> tuple[list[str], Path]:
    out = tmp_path / f"variants-{backend}.yaml"
    said = device_check.check_variants(argparse.Namespace(
        variants_file=ROOT / "projects" / "variants.yaml", model=model, corpus=corpus_dir / "comparison.jsonl",
        out=out, backend=backend, memory_bytes=memory_bytes))
    return said.splitlines(), out


@pytest.mark.unit
def test_the_checks_campaign_on_a_gpu_is_fp32_and_bf16_at_8_and_at_the_batch_series_last_size(tmp_path, corpus_dir,
                                                                                            model_dir):
    from gpucost_mlflow.core.inputs.variants import load_series, load_variants

    lines, out = _variants(tmp_path, corpus_dir, "cuda", H200_BYTES, model_dir)
    assert lines[0] == ",".join(_expected(8, gpu=True) + _expected(16, gpu=True))
    assert lines[1] == ("GPU-sized batch 16 (batch sizes 8, 16: batch 32 would exceed the corpus's 30 inputs)")
    declared = load_variants(out)
    assert declared["batch8"].settings == load_variants(ROOT / "projects" / "variants.yaml")["batch8"].settings
    assert declared["batch16-bf16-nocudnn"].settings.sdpa_backend == "efficient"
    assert declared["batch16-bf16-nocudnn"].reference == "batch16-bf16"
    if "batch16-bf16-pad32" in declared:
        assert declared["batch16-bf16-pad32"].settings.pad_to_multiple_of == 32
    assert set(load_series(out)) == {"check-precision-8", "check-attention-8", "check-precision-16",
                                     "check-attention-16", "check-batch"}


@pytest.mark.unit
def test_on_the_cpu_the_checks_campaign_stays_at_batch_8_without_cudnn(tmp_path, corpus_dir):
    lines, _ = _variants(tmp_path, corpus_dir, "cpu")
    assert lines[0] == ",".join(_expected(8, gpu=False)) and lines[0].startswith("batch8,batch8-bf16")
    assert ("SKIP batch8-bf16-nocudnn: cuDNN attention is a GPU's; on the CPU `sdpa_backend: efficient` "
            "shows nothing") in lines


@pytest.mark.unit
def test_a_setting_this_checkout_lacks_leaves_its_variant_out_with_the_reason(tmp_path, corpus_dir, monkeypatch):
    monkeypatch.setattr(device_check, "_declared_fields", lambda: {"batch_size", "precision"})
    lines, out = _variants(tmp_path, corpus_dir, "cpu")
    assert lines[0] == "batch8,batch8-bf16"
    assert "SKIP batch8-bf16-pad32: this checkout's variants have no `pad_to_multiple_of` setting yet" in lines
    assert "check-attention-8" not in out.read_text()


def _gpu_pass(client: MlflowClient, experiment_id: str, variant: str, metrics: dict, stack: dict) -> None:
    import json

    run = client.create_run(experiment_id, tags={schema.VARIANT: variant, schema.BACKEND: "cuda"})
    for key, value in {"pass_s": 0.5, **metrics}.items():
        client.log_metric(run.info.run_id, key, value)
    client.log_text(run.info.run_id, json.dumps({"stack": stack}), schema.MANIFEST)
    client.set_terminated(run.info.run_id, "FINISHED")


@pytest.mark.unit
def test_every_gpu_pass_needs_both_memory_peaks_and_driver_cuda_and_cudnn(store):
    client = MlflowClient()
    experiment_id = client.create_experiment("stack")
    full = {"driver": "580.159.04", "cuda_runtime": "13.0", "cudnn": "91400"}
    peaks = {"mem_peak_allocated_bytes": 3e8, "mem_peak_reserved_bytes": 4e8}
    _gpu_pass(client, experiment_id, "batch8", peaks, full)
    args = argparse.Namespace(experiment="stack")
    assert device_check.check_stack(args) == ("1 GPU passes: allocated and reserved peaks, reserved >= allocated; "
                                              "driver 580.159.04, cuda_runtime 13.0, cudnn 91400")
    _gpu_pass(client, experiment_id, "batch8-bf16", {"mem_peak_allocated_bytes": 5e8, "mem_peak_reserved_bytes": 4e8},
              {**full, "cudnn": ""})
    _gpu_pass(client, experiment_id, "batch16", {"mem_peak_reserved_bytes": 4e8}, full)
    with pytest.raises(device_check.CheckFailed) as failed:
        device_check.check_stack(args)
    said = str(failed.value)
    assert "batch8-bf16" in said and "reserved peak 400000000 B below allocated 500000000 B" in said
    assert "stack cudnn empty" in said and "batch16" in said and "no allocated memory peak" in said


@pytest.mark.unit
def test_the_bundle_carries_what_the_image_lacks_at_the_versions_installed_here():
    requires = {"gpucost-mlflow": ["mlflow>=3.7", "torch", "nvidia-ml-py; extra == 'gpu'", "pytest; extra == 'test'"],
                "mlflow": ["alembic<2", "numpy<3", "waitress<4; platform_system == 'Windows'"],
                "alembic": ["Mako", "sqlalchemy>=1.4"], "Mako": ["MarkupSafe>=0.9.2"], "sqlalchemy": []}
    versions = {"mlflow": "3.17.2", "alembic": "1.20.1", "Mako": "1.4.3", "sqlalchemy": "2.1.9"}
    image = {"torch", "numpy", "markupsafe", "nvidia-ml-py"}
    pins = device_bundle.missing(requires.get, versions.get, image, device_bundle.target_environment("3.12"))
    assert pins == {"alembic": "1.20.1", "mako": "1.4.3", "mlflow": "3.17.2", "sqlalchemy": "2.1.9"}
    with pytest.raises(device_bundle.BundleError, match="sqlalchemy is needed on the device but not installed here"):
        device_bundle.missing(requires.get, {**versions, "sqlalchemy": None}.get, image,
                              device_bundle.target_environment("3.12"))
    assert {"torch", "transformers", "nvidia-ml-py"} <= device_bundle.image_packages()


@pytest.mark.unit
def test_the_payload_is_cut_into_the_fewest_parts_a_call_carries_beside_the_tree(tmp_path):
    assert [len(chunk) for chunk in device_bundle.split(b"x" * 100, 40)] == [34, 34, 32]
    assert [len(chunk) for chunk in device_bundle.split(b"x" * 80, 40)] == [40, 40]
    with pytest.raises(device_bundle.BundleError, match="the working tree alone fills"):
        device_bundle.split(b"x", 0)
    parts = device_bundle.write(tmp_path / "bundle", [b"a" * 3, b"b" * 2])
    assert [part.size for part in parts] == [3, 2]
    sums = (tmp_path / "bundle" / "part-2" / "bundle.sha256").read_text().splitlines()
    assert [line.split("  ")[1] for line in sums] == ["payload.tgz.01", "payload.tgz.02", "payload.tgz"]
    said = device_bundle.calls(parts)
    assert said[0].startswith("call 1 of 2: run(carry=[") and 'command="bash benchmarks/device_run.sh stage"' in said[0]
    assert said[1].endswith('command="bash benchmarks/device_run.sh", timeout_s=600)')


def _fake_checkout(tmp_path, parts: list[bytes]) -> Path:
    """A checkout holding device_run.sh, a device_check.sh stub that lists what it was given, and the bundle's parts."""
    import shutil

    root = tmp_path / "repo"
    (root / "benchmarks").mkdir(parents=True)
    shutil.copy(RUN_SCRIPT, root / "benchmarks" / "device_run.sh")
    (root / "benchmarks" / "device_check.sh").write_text(
        'mkdir -p "$OUT"; { echo "PASS check"; ls "$(dirname "$0")/../data/model"; echo "$PYTHONPATH"; } '
        '>"$OUT/summary.txt"\n', encoding="utf-8")
    device_bundle.write(root / ".device-bundle", parts)
    return root


def _payload(tmp_path) -> bytes:
    import io
    import tarfile

    source = tmp_path / "payload"
    (source / "wheels").mkdir(parents=True)
    (source / "wheels" / "demo-1.0-py3-none-any.whl").write_bytes(b"wheel")
    (source / "data" / "model").mkdir(parents=True)
    (source / "data" / "model" / "config.json").write_text("{}")
    (source / "data" / "corpus").mkdir(parents=True)
    (source / "data" / "corpus" / "comparison.jsonl").write_text("{}\n")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in ("wheels", "data"):
            tar.add(source / name, arcname=name)
    return buffer.getvalue()


def _device_run(root, tmp_path, *args: str) -> subprocess.CompletedProcess:
    stub = tmp_path / "python"  # pip and compileall are the device's; here they only say they ran
    stub.write_text('#!/bin/sh\necho "python $*" >>"$(dirname "$0")/python.log"\n', encoding="utf-8")
    stub.chmod(0o755)
    (tmp_path / "out").mkdir(exist_ok=True)
    env = dict(os.environ, GPUCOST_PYTHON=str(stub), GPUCOST_BUNDLE_STORE=str(tmp_path / "store"),
               GPUCOST_CHECK_DIR=str(tmp_path / "check"), OUT=str(tmp_path / "out"))
    return subprocess.run(["bash", str(root / "benchmarks" / "device_run.sh"), *args], env=env, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.integration
def test_the_device_run_joins_the_parts_of_earlier_calls_installs_offline_and_runs_the_check(tmp_path):
    payload = _payload(tmp_path)
    root = _fake_checkout(tmp_path, [payload[:len(payload) // 2], payload[len(payload) // 2:]])
    second = root / ".device-bundle" / "part-2"
    held = tmp_path / "held"
    second.rename(held)  # the first call carries part 1 only
    staged = _device_run(root, tmp_path, "stage")
    assert staged.returncode == 0 and "1 of 2 part(s) here" in staged.stdout, staged.stdout + staged.stderr
    early = _device_run(root, tmp_path)
    assert early.returncode == 2 and "missing part-2" in early.stdout
    import shutil

    shutil.rmtree(root / ".device-bundle" / "part-1")  # the second call carries part 2 only
    held.rename(second)
    done = _device_run(root, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 2 part(s) here" in done.stdout and "1 wheels installed" in done.stdout
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert summary.splitlines()[:2] == ["PASS check", "config.json"] and str(tmp_path / "store" / "site") in summary
    assert (tmp_path / "out" / "device-check.tgz").is_file()
    assert "-m pip install -q --no-index --no-deps" in (tmp_path / "python.log").read_text()


@pytest.mark.unit
def test_the_cold_warm_probe_says_each_settings_ratio_and_the_defaults_cold_cost_against_cudnn_off():
    default = cold_warm.Probe("default", "cuda", "bf16", {10: 0.9, 20: 1.1}, {10: 0.01, 20: 0.01})
    off = cold_warm.Probe("cudnn-off", "cuda", "bf16", {10: 0.02, 20: 0.02}, {10: 0.01, 20: 0.01})
    assert default.line() == ("default: cold 2.000 s, warm 0.020 s over widths 10-20 (bf16, cuda): cold/warm 100.0, "
                              "worst 110.0 at 20")
    assert cold_warm.summary([default, off]) == ("cold/warm over 2 widths at batch 8: default 100.0, cudnn-off 2.0; "
                                                 "the default's cold forwards took 50.0 times cuDNN-off's")


@pytest.mark.unit
def test_the_lanes_step_runs_where_the_variant_settings_declare_lanes():
    """The check looked for `lanes` on `Variant` after it moved to the variant's `Settings`, so the lanes step was
    skipped on every checkout, the H200 run of 2026-12-04 included."""
    assert device_check.knows_lanes(argparse.Namespace()) == "the variants loader knows `lanes`"
