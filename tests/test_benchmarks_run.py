"""Every script under benchmarks/ runs end to end on the test slice (issue 65, item 5): the 30-input corpus and the
tiny classifier of tests/conftest.py, one repetition, the smallest sizes, so that a change of the product's interfaces
breaks a test here and not the next measurement. The figures they print are never asserted (tests time nothing):
only that each script ran to its end, judged what it measured and said its figures.

The scripts run in this process where they can (`runpy`, as `python benchmarks/NAME.py` runs them, their __main__
block included): torch, transformers and MLflow are imported once for all of them. engines.py starts worker processes
of its own, so it runs as a command. The scripts of a GPU machine run what a CPU can: device_check.sh whole with
--small in CI's own step (`make device-check`: cold_warm.py's probe with it), its refusals in `make test`;
device_run.sh its staging and joining with a stand-in Python; device_bundle.py everything but `pip download`, from
wheels already fetched.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import runpy
import shutil
import subprocess
import sys

import pytest

from tests.helpers import ROOT

BENCHMARKS = ROOT / "benchmarks"
HERE = "tests/test_benchmarks_run.py"
DEVICE_CHECK = "tests/test_device_check.py"

# Every script under benchmarks/ and the tests that run it, each as (module, the start of its name): a new script
# without one fails the first test below.
PIPELINE_TRIO = (HERE, "test_the_pipeline_harness_and_breakdown_benchmarks_run")
SMALL_DEVICE_CHECK = (DEVICE_CHECK, "test_small_device_check_passes_on_the_cpu")
SCRIPTS = {
    "vs_pipeline.py": (PIPELINE_TRIO,),
    "harness_overhead.py": (PIPELINE_TRIO,),
    "pass_breakdown.py": (PIPELINE_TRIO,),
    "engines.py": ((HERE, "test_the_engines_benchmark_runs_both_sections"),),
    "system_metrics.py": ((HERE, "test_the_system_metrics_benchmark_runs"),),
    "report_scaling.py": ((HERE, "test_the_report_scaling_benchmark_runs"),),
    "cold_warm.py": ((HERE, "test_the_cold_warm_probe_measures_a_setting"), SMALL_DEVICE_CHECK),
    "device_bundle.py": ((HERE, "test_the_device_bundle_packs_and_cuts"),),
    "first_lap.py": (("tests/test_shape_setup.py", "test_the_first_lap_benchmark_runs_end_to_end"),),
    "race_replay.py": (("tests/test_race.py", "test_the_replay_over_a_tiny_store"),),
    # A GPU's: whole on the CPU with --small in CI's step after `make test` (80 s); in `make test`, its refusals.
    "device_check.sh": (SMALL_DEVICE_CHECK, (DEVICE_CHECK, "test_full_device_check_refuses_a_machine_without_gpu"),
                        (DEVICE_CHECK, "test_an_unknown_argument_stops_the_script")),
    "device_check.py": (SMALL_DEVICE_CHECK, (HERE, "test_the_device_checks_helper_writes")),
    # The device's run of the bundle: its part-1 staging and the joining, with a stand-in for the device's Python.
    "device_run.sh": ((DEVICE_CHECK, "test_the_device_run_joins_the_parts"),),
}
# Scripts kept beside their dated outputs in benchmarks/results/: records of what was run, with the machine's own
# paths; the test named runs what each checked.
RECORDS = {"2026-11-29-campaign-ctrlc-resume.py": ("tests/test_campaign.py", "test_ctrl_c_during_a_pass_then_resume")}


def run_script(monkeypatch, name: str, *args: str) -> None:
    """benchmarks/NAME as `python benchmarks/NAME ARGS` runs it, in this process: its folder first on the path, its
    __main__ block run; an exit other than 0 fails the test."""
    path = BENCHMARKS / name
    monkeypatch.setattr(sys, "argv", [str(path), *args])
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        assert exc.code in (0, None), f"{name} exited {exc.code}"


@pytest.mark.unit
def test_every_script_under_benchmarks_names_the_tests_that_run_it():
    found = {path.name for path in BENCHMARKS.iterdir() if path.suffix in (".py", ".sh")}
    assert found == set(SCRIPTS), "a script under benchmarks/ without a test that runs it, or one listed but gone"
    records = {path.name for path in (BENCHMARKS / "results").iterdir() if path.suffix in (".py", ".sh")}
    assert records == set(RECORDS)
    for module, name in {test for tests in SCRIPTS.values() for test in tests} | set(RECORDS.values()):
        assert re.search(rf"^def {name}", (ROOT / module).read_text(encoding="utf-8"), re.MULTILINE), (module, name)


@pytest.mark.integration
def test_the_pipeline_harness_and_breakdown_benchmarks_run_on_the_slice(monkeypatch, capsys, corpus_dir, model_dir,
                                                                        protocol_file):
    """vs_pipeline.py judges its candidates by the product's own judge (its reference bars for bf16, its quality bars
    for the length-grouped variant), so a change of the checks cannot break it again."""
    corpus, model = str(corpus_dir / "comparison.jsonl"), str(model_dir)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # the scripts set it, as the pass's child does
    run_script(monkeypatch, "vs_pipeline.py", "--repeats", "1", "--corpus", corpus, "--model", model, "--protocol",
               str(protocol_file), "--variants", str(ROOT / "projects" / "variants.yaml"), "--candidates",
               "batch8-lengthgrouped,batch8-bf16")
    out = capsys.readouterr().out
    assert "(a) identical settings (batch8" in out and "identical predictions in every repetition: " in out
    judged = {line.split()[0]: line for line in out.splitlines() if " median " in line and "agreement" in line}
    assert set(judged) == {"batch8-lengthgrouped", "batch8-bf16"}
    assert all(line.endswith("accepted") or "rejected: " in line for line in judged.values())
    assert "(b) " in out and "(benchmark wall time" in out

    run_script(monkeypatch, "harness_overhead.py", "--repeats", "1", "--corpus", corpus, "--model", model)
    out = capsys.readouterr().out
    assert "identical predictions: True" in out and "pass_s / bare_s = " in out

    run_script(monkeypatch, "pass_breakdown.py", "--variants", "batch8", "--repeats", "1", "--corpus", corpus,
               "--model", model)
    out = capsys.readouterr().out
    assert "batch8:" in out and "harness share of the pass:" in out and "runner.measure" in out


@pytest.mark.integration
def test_the_system_metrics_benchmark_runs_a_pair_of_real_passes(monkeypatch, capsys, tmp_path, corpus_dir,
                                                                 model_dir, protocol_file):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "")  # the script points it at its own store; restored after
    monkeypatch.setenv("GPUCOST_SPOOL", str(tmp_path / "spool"))
    monkeypatch.chdir(tmp_path)  # its store's artifacts go to ./mlruns
    run_script(monkeypatch, "system_metrics.py", "--pairs", "1", "--corpus", str(corpus_dir / "comparison.jsonl"),
               "--model", str(model_dir), "--protocol", str(protocol_file))
    out = capsys.readouterr().out
    assert "pair 1 sampling on: pass_s " in out and "pair 1 sampling off: pass_s " in out
    assert "ratio of medians (sampling / none): " in out
    from gpucost_mlflow.tracking import system_metrics

    assert system_metrics.Sampler.start.__name__ == "start"  # the launcher's own sampler is back


@pytest.mark.integration
def test_the_report_scaling_benchmark_runs_on_a_store_of_a_few_runs(monkeypatch, capsys, tmp_path):
    import mlflow

    monkeypatch.chdir(tmp_path)
    try:
        run_script(monkeypatch, "report_scaling.py", "--sizes", "12", "--repeats", "1", "--dir", str(tmp_path))
    finally:
        mlflow.set_tracking_uri(None)
    out = capsys.readouterr().out
    assert "12 pass runs (+" in out and "'attempts': 12" in out and "| 12 | " in out
    assert "timeout" not in out.split("raw s:")[1].splitlines()[0]  # the report was built, not stopped


@pytest.mark.integration
def test_the_cold_warm_probe_measures_a_setting_as_its_child_does(monkeypatch, capsys, model_dir):
    """The probe's child, in this process: the model loaded as the probe loads it, its forwards cold then warm. The
    probe itself (a fresh process per setting, two of them) runs whole in the device check's CI step; it imports
    nothing of the product, so no interface of it can break the probe between the two."""
    run_script(monkeypatch, "cold_warm.py", "child", "--model", str(model_dir), "--widths", "10", "20")
    probe = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert probe["setting"] == "default" and set(probe["cold_s"]) == set(probe["warm_s"]) == {"10", "20"}
    assert probe["device"] != "cpu" or "fp32 on a CPU" in probe["note"]


@pytest.mark.integration
def test_the_engines_benchmark_runs_both_sections_and_bounds_the_fastest(tmp_path, corpus_dir, model_dir,
                                                                         protocol_file, tiny_gguf, model_cache):
    """Torch, ONNX Runtime and the pipeline on the classifier; torch and the pipeline on the tiny GGUF, dequantised
    into the session's model cache (the generation tests' too); a planted fp32 peak, so the fastest configuration
    that passes is profiled and bounded as on a measured host. CTranslate2 is left out (a worker and a conversion
    more): the script has no code of its own for it, and the generation tests run it."""
    import torch

    from gpucost_mlflow.execution import devices, peak

    peaks = tmp_path / "peak.json"
    peak.save([peak.Peak(device=devices.cpu_name(), torch=torch.__version__, threads=threads, precision="fp32",
                         flop_per_s=1e11, size=64, measured_at="2026-12-05T00:00:00+00:00")
               for threads in range(1, (os.cpu_count() or 1) + 1)], peaks)
    env = dict(os.environ, GPUCOST_ENGINE_CACHE=str(tmp_path / "engines"), GPUCOST_MODEL_CACHE=str(model_cache),
               GPUCOST_PEAK_CACHE=str(peaks))
    corpus = str(corpus_dir / "comparison.jsonl")
    done = subprocess.run([sys.executable, str(BENCHMARKS / "engines.py"), "--repeats", "1", "--corpus", corpus,
                           "--model", str(model_dir), "--protocol", str(protocol_file), "--variants",
                           str(ROOT / "projects" / "variants.yaml"), "--configs", "ort-batch8", "--gen-prompts", "2",
                           "--gen-corpus", corpus, "--gen-model", str(tiny_gguf), "--gen-configs", "gen-batch8"],
                          env=env, capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    assert "not measured" not in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith("  ") and len(line.split()) > 8}
    assert rows["batch8"][1] == "torch" and rows["ort-batch8"][1] == "onnxruntime"
    assert "yes" in rows["ort-batch8"]  # fp32 against fp32: the reference's bars passed
    assert "pipeline vs torch batch8 (identical settings): predictions identical: " in out
    assert "present at start: False (its export" in out  # exported here, into this test's engine cache
    assert "== (2) generation: tiny-llama.gguf" in out and "gen-batch8" in rows
    assert "fastest passing: " in out and "bounded mainly by: " in out
    assert "(benchmark wall time" in out


@pytest.mark.integration
def test_the_device_bundle_packs_and_cuts_the_payload_from_wheels_already_fetched(monkeypatch, capsys, tmp_path,
                                                                                  corpus_dir, model_dir):
    """Everything but `pip download` (offline here): a wheel of every pin is already in the folder, which the
    script's own cache then reuses; data/ is the test slice's. The parts hold the payload, checksummed."""
    from tests.helpers import load_benchmark

    bundle = load_benchmark("device_bundle")
    pins = bundle.missing(bundle._requires, bundle._installed, bundle.image_packages(),
                          bundle.target_environment("3.12"))
    wheels = tmp_path / "out" / "wheels"
    wheels.mkdir(parents=True)
    for name, version in pins.items():
        (wheels / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(name.encode())
    data = tmp_path / "checkout" / "data"
    shutil.copytree(model_dir, data / "model")
    (data / "corpus").mkdir()
    for name in ("comparison.jsonl", "corpus.json"):
        shutil.copy(corpus_dir / name, data / "corpus" / name)
    run_script(monkeypatch, "device_bundle.py", "--out", str(tmp_path / "out"), "--data", str(data.parent))
    out = capsys.readouterr().out
    assert f"device-bundle: {len(pins)} wheels " in out and 'command="bash benchmarks/device_run.sh' in out
    parts = sorted((tmp_path / "out").glob("part-*/payload.tgz.*"))
    whole = b"".join(path.read_bytes() for path in parts)
    sums = (tmp_path / "out" / "part-1" / "bundle.sha256").read_text(encoding="utf-8")
    assert f"{hashlib.sha256(whole).hexdigest()}  payload.tgz" in sums
    assert "mlflow" in pins  # the image lacks MLflow: carried


@pytest.mark.integration
def test_the_device_checks_helper_writes_the_checks_inputs_from_its_command_line(monkeypatch, capsys, tmp_path,
                                                                                 corpus_dir, model_dir):
    """device_check.py's command line, as device_check.sh calls it, for the inputs a CPU writes: the protocol copy and
    the checks campaign's variants (the checks of a store's passes are the unit tests' of test_device_check.py)."""
    protocol = tmp_path / "protocol.yaml"
    run_script(monkeypatch, "device_check.py", "protocol", "--source", str(ROOT / "projects" / "protocol.yaml"),
               "--corpus", str(corpus_dir / "comparison.jsonl"), "--out", str(protocol), "--passes", "1",
               "--any-quality")
    run_script(monkeypatch, "device_check.py", "check-variants", "--variants-file",
               str(ROOT / "projects" / "variants.yaml"), "--model", str(model_dir), "--corpus",
               str(corpus_dir / "comparison.jsonl"), "--out", str(tmp_path / "variants.yaml"), "--backend", "cpu")
    out = capsys.readouterr().out
    assert protocol.is_file() and (tmp_path / "variants.yaml").is_file()
    assert out.splitlines()[-1].split(",")[0] == "batch8" or "batch8," in out
