"""`make demo` fits its variants to the host: a precision whose measured peak is below fp32's is left out, said once."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.campaign.demo import DEMO_VARIANTS, fit
from tests.helpers import cli_runner

pytestmark = pytest.mark.unit


def test_a_slow_precision_is_left_out_with_its_reason_and_the_rest_keep_their_order():
    fitted = fit({"batch1": "fp32", "batch8-bf16": "bf16", "batch8": "fp32"}, {"bf16": "peak 1 below fp32's 16"})
    assert fitted.kept == ("batch1", "batch8")
    assert fitted.left_out == {"batch8-bf16": "bf16 is not native here: peak 1 below fp32's 16"}
    assert fitted.line() == "left out of the demo on this machine: batch8-bf16 (bf16 is not native here: peak 1 below fp32's 16)"


def test_nothing_slow_keeps_every_variant_and_says_nothing():
    fitted = fit({"batch8": "fp32", "batch8-bf16": "bf16"}, {})
    assert fitted.kept == ("batch8", "batch8-bf16") and fitted.line() == ""


def _fake_peaks(path, **gflops: float) -> None:
    """A peak cache for this CPU as `gpucost doctor --peak` writes it, with the given GFLOP/s per precision."""
    torch = pytest.importorskip("torch", reason="the peak cache is keyed by the torch build")
    from gpucost_mlflow.execution import peak

    peaks = [peak.Peak(device=peak._where(torch.device("cpu"))[0], torch=torch.__version__,
                       threads=torch.get_num_threads(), precision=name, flop_per_s=value * 1e9, size=512,
                       measured_at="2026-12-02T00:00:00+00:00") for name, value in gflops.items()]
    peak.save(peaks, path)


@pytest.mark.parametrize(("bf16", "left_out"), [(1.0, True), (40.0, False)], ids=["emulated-bf16", "native-bf16"])
def test_demo_variants_follow_the_measured_peak(tmp_path, monkeypatch, bf16, left_out):
    cache = tmp_path / "peak.json"
    monkeypatch.setenv("GPUCOST_PEAK_CACHE", str(cache))
    _fake_peaks(cache, fp32=16.0, bf16=bf16)
    listed = cli_runner().invoke(main, ["demo", "variants", "--device", "cpu", "--list"])
    shown = cli_runner().invoke(main, ["demo", "variants", "--device", "cpu"])
    assert listed.exit_code == 0 and shown.exit_code == 0, listed.output + shown.output
    kept = [name for name in DEMO_VARIANTS if not (left_out and name == "batch8-bf16")]
    assert listed.stdout.strip() == ",".join(kept)
    assert shown.stdout.splitlines()[0] == "the demo runs here: " + ", ".join(kept)
    if left_out:
        reason = ("left out of the demo on this machine: batch8-bf16 (bf16 is not native here: its dense-matmul peak "
                  "here (1.0 GFLOP/s) is below fp32's (16.0 GFLOP/s))")
        assert listed.stderr.strip() == reason and reason in shown.stdout
    else:
        assert "left out" not in listed.output + shown.output


def test_demo_variants_without_a_cached_peak_keep_everything_and_say_so(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="reading the peak cache resolves the torch device")
    monkeypatch.setenv("GPUCOST_PEAK_CACHE", str(tmp_path / "none.json"))
    result = CliRunner().invoke(main, ["demo", "variants", "--device", "cpu"])
    assert result.exit_code == 0
    assert "the demo runs here: " + ", ".join(DEMO_VARIANTS) in result.output
    assert "no dense-matmul peak cached" in result.output


def test_an_unknown_demo_variant_is_one_line_and_exit_2():
    result = CliRunner().invoke(main, ["demo", "variants", "--variants", "batch8,batch999"])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0
    assert "batch999" in result.output


def test_the_third_series_leaves_out_a_precision_slower_than_fp32(tmp_path, monkeypatch):
    """The proposal reads the same cache as the demo (its pure rule: test_proposal.py): where bf16 is emulated, an
    accepted bf16 change is never combined."""
    from gpucost_mlflow.execution.peak import slow_precisions

    cache = tmp_path / "peak.json"
    monkeypatch.setenv("GPUCOST_PEAK_CACHE", str(cache))
    _fake_peaks(cache, fp32=16.0, bf16=1.0)
    assert list(slow_precisions("cpu")) == ["bf16"]


def test_on_a_cpu_the_demo_list_is_todays(tmp_path, monkeypatch):
    """The batch series is a GPU's: on the CPU the list is the package's, whatever the model and protocol say."""
    pytest.importorskip("torch", reason="the device is resolved through torch")
    monkeypatch.setenv("GPUCOST_PEAK_CACHE", str(tmp_path / "none.json"))
    listed = cli_runner().invoke(main, ["demo", "variants", "--device", "cpu", "--list"])
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.strip() == ",".join(DEMO_VARIANTS)
    assert "batch series" not in listed.output


def _fake_gpu(monkeypatch, name: str, memory_bytes: int) -> None:
    """torch resolving 'auto' to a CUDA device of this name and memory, with no peak cached for it (the series reads
    nothing else of it)."""
    import types

    torch = pytest.importorskip("torch", reason="the device is resolved through torch")
    from gpucost_mlflow.execution import models, peak

    monkeypatch.setattr(models, "resolve_device", lambda choice: torch.device("cuda"))
    monkeypatch.setattr(peak, "peaks_known", lambda choice: False)
    monkeypatch.setattr(peak, "slow_precisions", lambda choice: {})
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: types.SimpleNamespace(name=name, total_memory=memory_bytes))


def test_on_a_gpu_the_batch_series_follows_batch8_until_the_corpus_or_the_memory_stops_it(tmp_path, monkeypatch,
                                                                                          model_dir):
    from gpucost_mlflow.core.inputs import shipped

    monkeypatch.setenv("GPUCOST_PEAK_CACHE", str(tmp_path / "none.json"))
    _fake_gpu(monkeypatch, "NVIDIA H200", 143771 * 2**20)
    demo_protocol = shipped.shipped(shipped.PROTOCOL).parent / "protocol-demo.yaml"
    arguments = ["demo", "variants", "--list", "--model", str(model_dir), "--protocol", str(demo_protocol)]
    listed = cli_runner().invoke(main, arguments)
    assert listed.exit_code == 0, listed.output
    kept = listed.stdout.strip().split(",")
    assert kept[:7] == ["batch8", "batch16", "batch32", "batch64", "batch128", "batch256", "batch8-bf16"]
    assert ("batch series on NVIDIA H200: batch sizes 8, 16, 32, 64, 128, 256: batch 512 would exceed the corpus's "
            "500 inputs") in listed.stderr

    _fake_gpu(monkeypatch, "a small GPU", 48 * 2**20)  # the tiny model: 28 MiB estimated at 16, 51 at 32
    small = cli_runner().invoke(main, arguments)
    assert small.exit_code == 0, small.output
    assert small.stdout.strip().split(",")[:3] == ["batch8", "batch16", "batch8-bf16"]
    assert "batch 32 will not fit" in small.stderr


def test_the_measured_utilisation_per_batch_size_is_read_from_the_experiments_passes_on_this_device(experiment):
    """What the series stops on (core/campaign/batch_series.py): the median GPU utilisation per batch size of the
    completed passes on the same device; another device's, a failed pass and an unknown experiment read nothing."""
    from gpucost_mlflow.flow.propose import utilisation_by_batch
    from tests import scenario

    for batch, busy in ((8, 0.18), (8, 0.20), (16, 0.41), (32, 0.62)):
        experiment(f"batch{batch}", scenario.B200, 1.0, params={"setting.batch_size": str(batch)},
                   metrics_extra={"gpu_utilisation": busy})
    experiment("batch64", scenario.RTX, 1.0, params={"setting.batch_size": "64"}, metrics_extra={"gpu_utilisation": 0.9})
    experiment("batch64", scenario.B200, None, status="failed", params={"setting.batch_size": "64"})
    assert utilisation_by_batch(scenario.EXPERIMENT, scenario.B200) == pytest.approx({8: 0.19, 16: 0.41, 32: 0.62})
    assert utilisation_by_batch("never-ran", scenario.B200) == {}
