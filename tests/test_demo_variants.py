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
    from gpucost_mlflow.flow.propose import slow_precisions

    cache = tmp_path / "peak.json"
    monkeypatch.setenv("GPUCOST_PEAK_CACHE", str(cache))
    _fake_peaks(cache, fp32=16.0, bf16=1.0)
    assert list(slow_precisions("cpu")) == ["bf16"]
