"""Memory estimate against observation, the environment check and the kit's notebook (PROTOCOL §2, §8)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.inputs.rocm import check, load_matrix
from gpucost_mlflow.workloads.encoder_memory import estimate, safetensors_parameters
from tests.helpers import FIRST_ROCM_MATRIX, ROOT

SMALL = {"hidden_size": 4, "num_attention_heads": 2, "intermediate_size": 8}


@pytest.mark.unit
def test_estimate_formulas_match_a_hand_checked_small_config():
    result = estimate(SMALL, parameters=1000, linear_parameters=600, precision="fp32", batch=2, max_length=3)
    parts = {p.name.split(" (")[0]: p.bytes for p in result.parts}
    assert parts["weights"] == 1000 * 4
    assert parts["hidden states in and out of a layer"] == 2 * 2 * 3 * 4 * 4      # 2 x B x L x h x 4 B
    assert parts["query, key, value"] == 3 * 2 * 3 * 4 * 4                         # 3 x B x L x h x 4 B
    assert parts["attention scores and probabilities"] == 2 * 2 * 2 * 3 * 3 * 4   # 2 x B x heads x L x L x 4 B
    assert parts["feed-forward intermediate"] == 2 * 3 * 8 * 4                     # B x L x i x 4 B
    allocated = 4000 + 192 + 288 + 288 + 192
    assert parts["caching-allocator margin"] == pytest.approx(0.2 * allocated)
    assert result.total_bytes == pytest.approx(1.2 * allocated)
    assert all("(estimate)" in p.name for p in result.parts)


@pytest.mark.unit
def test_half_precision_halves_weights_and_int8_keeps_non_linear_weights_in_fp32():
    bf16 = estimate(SMALL, 1000, 600, precision="bf16", batch=1, max_length=1)
    int8 = estimate(SMALL, 1000, 600, precision="int8", batch=1, max_length=1)
    assert bf16.parts[0].bytes == 2000 and int8.parts[0].bytes == 600 * 1 + 400 * 4


@pytest.mark.parametrize("gib, verdict", [(100.0, "fits"), (1e-6, "does not fit")])
@pytest.mark.unit
def test_fit_verdicts(gib, verdict):
    assert estimate(SMALL, 10**6, 10**5, precision="fp32", batch=1, max_length=8, device_memory_gib=gib).verdict.startswith(verdict)


@pytest.mark.unit
def test_too_close_to_say_within_fifteen_percent():
    total = estimate(SMALL, 10**6, 10**5, precision="fp32", batch=1, max_length=8).total_bytes
    assert estimate(SMALL, 10**6, 10**5, precision="fp32", batch=1, max_length=8,
                    device_memory_gib=total * 1.1 / 2**30).verdict.startswith("too close to say")


@pytest.mark.unit
def test_parameters_are_counted_from_the_safetensors_header(minilm_dir):
    total, linear = safetensors_parameters(minilm_dir)
    assert 22_000_000 < total < 23_000_000 and 0 < linear < total


@pytest.mark.unit
def test_rocm_matrix_lookup_lists_known_and_warns_on_unknown_combinations():
    matrix = load_matrix(FIRST_ROCM_MATRIX)
    assert check(matrix, "6.0.32830", "2.1.2+rocm6.0", "2024-03-22").status == "listed"
    assert check(matrix, "5.7.1", "2.3.0", "2024-03-22").status == "warning"
    unknown = check(matrix, "6.4.1", "2.7.0", "2024-03-22")
    assert unknown.status == "warning" and "not in the 2024-03-22 matrix snapshot" in unknown.message


@pytest.mark.unit
def test_doctor_on_a_machine_without_gpu_says_so_and_exits_0():
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0
    assert "no GPU" in result.output and "(build: cpu)" in result.output


@pytest.mark.unit
def test_estimate_and_measure_both_print_on_cpu(model_dir):
    estimate_out = CliRunner().invoke(main, ["memory", "estimate", "--model", str(model_dir), "--batch", "8", "--max-length", "256",
                                             "--device-memory-gib", "24"])
    assert estimate_out.exit_code == 0 and "verdict: fits" in estimate_out.output
    measure_out = CliRunner().invoke(main, ["memory", "measure", "--model", str(model_dir), "--batch", "2", "--max-length", "32"])
    assert measure_out.exit_code == 0, measure_out.output
    assert "OBSERVED on cpu" in measure_out.output and "process RSS" in measure_out.output
    assert "estimate / observed" in measure_out.output and "no GPU" in measure_out.output


@pytest.mark.integration
def test_memory_notebook_executes_headless(model_dir, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("GPUCOST_MODEL", str(model_dir))
    monkeypatch.setenv("GPUCOST_BATCH", "2")
    monkeypatch.setenv("GPUCOST_MAX_LENGTH", "32")
    notebook = nbformat.read(ROOT / "docs" / "memory.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "docs")}}).execute()
    text = "".join(o.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs)
    assert "total (estimate)" in text and "estimate / observed" in text and "torch" in text
