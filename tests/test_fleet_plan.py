"""Which offers are worth measuring (`gpucost fleet plan`, docs/fleet.md): from the configurations measured so far, a
bound, the memory fit and a verdict per device of the catalogs no pass ran on, against the best committed cost; the
launch line for those worth it; never a decision. Stores written through the project's own writer, offers from the
seeded SkyPilot AWS catalog (tests/skypilot_home.py) turned into rows by the import's own function."""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import Gpucost
from gpucost_mlflow.cli.fleet_plan import plan_cmd
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import devices, plan
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.money import market
from gpucost_mlflow.core.money.catalog import example_catalog, load_catalog
from gpucost_mlflow.core.names import MFU_USEFUL, USEFUL_FLOP_PER_S
from tests.helpers import CATALOG, SHIPPED_PROTOCOL, VARIANTS
from tests.scenario import EXPERIMENT
from tests.skypilot_home import AWS_VMS

SPECS = devices.load_device_specs([shipped.shipped(shipped.DEVICE_SPECS)])
NAMES = market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES)])
TABLES = devices.Tables(SPECS, NAMES)
L4, XEON = "NVIDIA L4", "Intel(R) Xeon(R) CPU @ 2.20GHz"
# A median pass of 10 s doing 1e12 useful FLOP/s: 1e13 useful FLOPs per corpus; the shipped protocol wants 1 corpus
# after 4 h of setup. GPU peaks as measured there: 2e9 bytes reserved (1.86 GiB).
L4_PASSES = (9.9, 10.0, 10.0, 10.1, 10.2)
ON_L4 = {USEFUL_FLOP_PER_S: 1e12, MFU_USEFUL: 0.25, "mem_peak_reserved_bytes": 2e9, "mem_peak_allocated_bytes": 1.5e9}


def seeded_aws(tmp_path: Path) -> Path:
    """The seeded SkyPilot home's AWS offers (g5.xlarge A10G in two regions, the 8 x A100 p4d.24xlarge), one row per
    instance and region at its cheapest zone as the import writes them, on AWS's billing terms (per second, 60 s
    min)."""
    cheapest: dict[tuple, market.Offer] = {}
    for instance, gpu, count, _, _, mib, price, _, region, _ in AWS_VMS:
        offer = market.Offer("aws", instance, region, gpu, count, mib / 1024, Decimal(price), None)
        key = (instance, region)
        if key not in cheapest or offer.price < cheapest[key].price:
            cheapest[key] = offer
    text = market.catalog_text(list(cheapest.values()), version="skypilot-v8-2026-11-28",
                               source="SkyPilot 0.14.1 catalog v8", as_of={"aws": dt.date(2026, 11, 28)}, names=NAMES,
                               terms=market.load_terms(shipped.shipped(shipped.BILLING_TERMS)), interruptions=None)
    path = tmp_path / "aws.csv"
    path.write_text(text.text)
    return path


def gcp_l4(tmp_path: Path, price: str) -> Path:
    """One GCP L4 offer at this hourly price: where the measured configuration is priced."""
    offer = market.Offer("gcp", "g2-standard-4", "us-central1-a", "L4", 1, 24.0, Decimal(price), None)
    text = market.catalog_text([offer], version="gpuhunt-2026-11-27", source="gpuhunt catalog",
                               as_of={"gcp": dt.date(2026, 11, 27)},
                               names=NAMES, terms=market.load_terms(shipped.shipped(shipped.BILLING_TERMS)),
                               interruptions=None)
    path = tmp_path / "gcp.csv"
    path.write_text(text.text)
    return path


def run_plan(*args: str):
    """`gpucost fleet plan` as the CLI runs it (a GpucostError is one line and exit 2)."""
    group = Gpucost("fleet", commands={"plan": plan_cmd})
    return CliRunner().invoke(group, ["plan", "--experiment", EXPERIMENT, "--protocol", str(SHIPPED_PROTOCOL),
                                      "--variants-file", str(VARIANTS), *args])


def block(output: str, heading: str) -> str:
    """The lines of one device's block: heading, lower bound, memory, verdict."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    return "\n".join(lines[start:start + 4])


@pytest.mark.unit
def test_an_offer_whose_bound_beats_the_measured_best_is_worth_measuring_and_an_8_gpu_lot_whose_bound_costs_more_is_not(
        experiment, tmp_path):
    """batch8 measured on an L4 at 3.00 USD/h commits 12.08 USD: 4 h setup + 74.2 s of comparisons (five runs of 4.8 s
    + their pass) + 7 s start-up (2 x 3.5 s) + one corpus at the slowest pass (10.2 + 0.3 s) = 14,491.7 s, billed
    14,492 s = 4.025556 h x 3.00. The work: 1e12 FLOP/s x the median 10 s = 1e13 useful FLOPs.
    A10G x1 bound: 1e13 / 31.2e12 FLOP/s (fp32) = 0.32 s, + 4 h = 14,400.32 s, billed 14,401 s = 4.000278 h x 1.006 =
    4.02 USD < 12.08: worth measuring (1.86 GiB measured fits 24 GiB).
    A100 x8 lot bound: 1e13 / (8 x 19.5e12) = 0.06 s, + 4 h, billed 14,401 s x 32.7726 USD/h = 131.10 USD > 12.08: not
    worth measuring. Worst case of the launch: the dearest A10G:1 offer, eu-west-1 at 1.258 USD/h x (0.5 + 2) h =
    3.15 USD."""
    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra=ON_L4)
    result = run_plan("--catalog", str(gcp_l4(tmp_path, "3.00")), "--catalog", str(seeded_aws(tmp_path)),
                      "--max-cost", "20")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Best committed cost measured so far: 12.08 USD, batch8 on NVIDIA L4" in out
    a10g = block(out, "a10g x1")
    assert "3 rows" not in a10g
    assert "2 rows, lowest bound on aws g5.xlarge in us-east-1 at 1.006 USD per lot-hour" in a10g
    assert "lower bound 4.02 USD: 1e+13 useful FLOPs" in a10g and "the fp32 dense peak 31.2 TFLOP/s" in a10g
    assert "memory: fits: 1.86 GiB (measured: mem_peak_reserved_bytes on NVIDIA L4) for 24 GiB" in a10g
    assert "verdict: worth measuring: its bound 4.02 USD beats the best committed 12.08 USD" in a10g
    a100 = block(out, "a100 x8")
    assert "lower bound 131.10 USD" in a100 and "x 8 GPUs (the work split over the whole lot at best" in a100
    assert "verdict: not worth measuring: even its bound 131.10 USD costs as much as or more than the best" in a100
    assert ("A10G:1: at most 3.15 USD (2.5 h x 1.258 USD/h, the dearest offer SkyPilot may choose: "
            "aws g5.xlarge in eu-west-1") in out
    assert "fleet worst case: 3.15 USD of --max-cost 20 USD" in out
    assert (f"gpucost fleet launch --gpus A10G --clouds aws --experiment {EXPERIMENT} --variants batch8 --protocol "
            f"{SHIPPED_PROTOCOL}") in out and "--max-hours 2 --setup-hours 0.5 --max-cost 20" in out
    assert out.rstrip().endswith(plan.NEVER_DECIDES)


@pytest.mark.unit
def test_the_plan_gives_the_worst_case_with_the_protocols_race_beside_the_one_without(experiment, tmp_path,
                                                                                      monkeypatch):
    """The launch line runs one configuration (the one carried): a race stops none of its five passes, so the worst
    case with the race is the same 3.15 USD, said so beside it."""
    from dataclasses import replace

    from gpucost_mlflow.core.inputs import protocol as protocols

    loaded = protocols.load_protocol
    monkeypatch.setattr(protocols, "load_protocol", lambda path: replace(loaded(path), race_from_round=2))
    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra=ON_L4)
    result = run_plan("--catalog", str(gcp_l4(tmp_path, "3.00")), "--catalog", str(seeded_aws(tmp_path)),
                      "--max-cost", "20")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("A10G:1: at most 3.15 USD")))
    assert lines[at + 1] == ("A10G:1 with the race (from round 2): the same 3.15 USD, the race stops none of 1 "
                             "configuration's 5 passes (the best runs all its passes)")
    assert lines[at + 2] == "fleet worst case: 3.15 USD of --max-cost 20 USD, over these catalogs' offers " \
                            "(`fleet launch` prices it again over SkyPilot's own)"
    assert lines[at + 3].startswith("fleet worst case with the race: 3.15 USD (without it: 3.15 USD;")


@pytest.mark.unit
def test_a_device_never_measured_gets_no_cost_but_its_bound_and_no_unrounded_hours(experiment, tmp_path):
    """A datasheet peak gives no throughput (PROTOCOL.md §8): a device no pass ran on gets its bound, a floor, and no
    dollar estimate. batch8 reached 0.04 of the L4's peak; carried to the A10G (0.04 x 31.2 TFLOP/s: 8.01 s + 4 h,
    billed 14,409 s) that estimate printed '4.002500000000000000000000000 h billed'. Each block's amounts are its
    bound and the best committed cost its verdict compares it with, nothing else."""
    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra={**ON_L4, MFU_USEFUL: 0.04})
    result = run_plan("--catalog", str(gcp_l4(tmp_path, "3.00")), "--catalog", str(seeded_aws(tmp_path)))
    assert result.exit_code == 0, result.output
    for heading, bound in (("a10g x1", "4.02"), ("a100 x8", "131.10")):
        said = block(result.output, heading).split("\n", 1)[1]  # past the heading, which names the lot's price
        assert set(re.findall(r"([\d,]+\.\d+) USD", said)) == {bound, "12.08"}, said
    assert "estimate" not in result.output.replace("memory estimate", "")
    assert not re.search(r"\d\.\d{5,}", result.output), result.output


@pytest.mark.unit
def test_a_plan_writes_nothing_and_leaves_the_report_deciding_on_measured_passes_only(experiment, tmp_path):
    from mlflow.tracking import MlflowClient

    from tests.scenario import report

    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra=ON_L4)
    before, _ = report(catalog=gcp_l4(tmp_path, "3.00"))
    runs = len(MlflowClient().search_runs([MlflowClient().get_experiment_by_name(EXPERIMENT).experiment_id]))
    assert run_plan("--catalog", str(gcp_l4(tmp_path, "3.00")), "--catalog", str(seeded_aws(tmp_path))).exit_code == 0
    after, _ = report(catalog=gcp_l4(tmp_path, "3.00"))
    assert runs == len(MlflowClient().search_runs([MlflowClient().get_experiment_by_name(EXPERIMENT).experiment_id]))
    assert before.decision == after.decision


def fake_encoder(folder: Path) -> Path:
    """A BERT-style model folder as the memory estimate reads it: config.json and a safetensors header (no weights
    needed to count parameters)."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"hidden_size": 32, "num_attention_heads": 2,
                                                    "intermediate_size": 64}))
    header = json.dumps({"encoder.layer.0.attention.self.query.weight": {"dtype": "F32", "shape": [32, 32],
                                                                         "data_offsets": [0, 4096]},
                         "embeddings.word_embeddings.weight": {"dtype": "F32", "shape": [1000, 32],
                                                               "data_offsets": [4096, 132096]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return folder


@pytest.mark.unit
def test_on_a_cpu_store_the_memory_fit_is_the_encoders_estimate_and_a_bound_above_the_cpus_cost_is_not_worth_it(
        experiment, tmp_path):
    """batch8 on the CPU at the example 0.10 USD/h (min 1 h, per 1 h): 4 h setup + 100 s passes -> 5 h billed, 0.50
    USD. The A10G's bound, 4 h of setup at 1.006 USD/h at least, costs more: not worth measuring. No GPU peak on a
    CPU: the memory is the encoder's estimate at batch 8, max length 256, fp32 (33,024 parameters x 4 B + activations
    + 20 %: 12,426,854 B, 0.01 GiB), labelled an estimate."""
    for seconds in (100.0, 101.0, 102.0, 101.0, 100.0):
        experiment("batch8", XEON, seconds, metrics_extra={USEFUL_FLOP_PER_S: 1e11, MFU_USEFUL: 0.5})
    cpu = tmp_path / "cpu.csv"
    cpu.write_text(example_catalog(XEON, Decimal("0.10"), "USD", Decimal(1), Decimal(1), "2026-12-01"))
    result = run_plan("--catalog", str(cpu), "--catalog", str(seeded_aws(tmp_path)),
                      "--model", str(fake_encoder(tmp_path / "model")))
    assert result.exit_code == 0, result.output
    a10g = block(result.output, "a10g x1")
    assert "Best committed cost measured so far: 0.50 USD, batch8 on Intel(R) Xeon(R) CPU @ 2.20GHz" in result.output
    assert "memory: fits: 0.01 GiB (estimate: `gpucost memory estimate --model" in a10g
    assert "--precision fp32 --batch 8 --max-length 256`, no GPU peak measured) for 24 GiB" in a10g
    assert ("verdict: not worth measuring: even its bound 4.02 USD costs as much as or more than the best committed "
            "0.50 USD") in a10g
    assert "No offer is worth measuring on these figures: no `gpucost fleet launch` line." in result.output


@pytest.mark.unit
def test_with_nothing_measured_priced_a_fitting_offer_is_worth_measuring_and_one_without_memory_is_unknown(
        experiment, tmp_path):
    """Passes on a CPU, the lab kit's catalog: nothing measured is priced, so there is no cost to beat. Without a model
    folder to estimate from, the memory fit is unknown, and so is every verdict; with one, both lots are worth
    measuring, and neither is a SkyPilot offer to launch."""
    for seconds in (100.0, 101.0, 102.0, 101.0, 100.0):
        experiment("batch8", XEON, seconds, metrics_extra={USEFUL_FLOP_PER_S: 1e11, MFU_USEFUL: 0.5})
    unknown = run_plan("--catalog", str(CATALOG), "--model", str(tmp_path / "absent"))
    assert unknown.exit_code == 0, unknown.output
    assert "Best committed cost measured so far: none" in unknown.output
    assert "verdict: unknown: no estimate of memory fit (unknown: no GPU memory peak measured, and no estimate" in \
        block(unknown.output, "b200 x2")
    known = run_plan("--catalog", str(CATALOG), "--model", str(fake_encoder(tmp_path / "model")))
    b200 = block(known.output, "b200 x2")
    assert "verdict: worth measuring: no measured configuration is priced in these catalogs" in b200
    # 1e13 FLOPs at 2 x 75 TFLOP/s = 0.07 s: the 7-day package is bought whole, 2,071.00 USD.
    assert "bound 2,071.00 USD" in b200 and "the fp32 dense peak 75 TFLOP/s" in b200
    assert "rtx-4090 x1 is worth measuring but not through `gpucost fleet launch`" in known.output
    assert "No launchable offer is worth measuring" in known.output


@pytest.mark.unit
def test_a_device_without_a_table_row_is_unknown_and_named(experiment, tmp_path):
    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra=ON_L4)
    mystery = market.catalog_text([market.Offer("aws", "x9.large", "us-east-1", "Z900", 1, 48.0, Decimal("3.5"), None)],
                                  version="v", source="s", as_of={"aws": dt.date(2026, 11, 28)}, names=NAMES,
                                  terms=market.load_terms(shipped.shipped(shipped.BILLING_TERMS)), interruptions=None)
    (tmp_path / "z.csv").write_text(mystery.text)
    result = run_plan("--catalog", str(gcp_l4(tmp_path, "3.00")), "--catalog", str(tmp_path / "z.csv"))
    z900 = block(result.output, "z900 x1")
    assert "bound empty: no row for z900 (device names unknown) in device-specs-2026-12-03.csv" in z900
    assert "verdict: unknown: no bound" in z900


@pytest.mark.unit
def test_an_experiment_without_a_carried_configuration_is_one_line(experiment, tmp_path):
    experiment("batch8", L4, None, status="failed", reason="out of memory")
    result = run_plan("--catalog", str(seeded_aws(tmp_path)))
    assert result.exit_code == 2 and "no measured configuration to carry" in result.output
    assert len(result.output.strip().splitlines()) == 1


def measured(name: str, quantization: str = "none", flops: float | None = 1e13) -> plan.ConfigurationFigures:
    return plan.ConfigurationFigures(name, name.split()[0], XEON, "fp32", quantization, flops, "", 1e8, "", 1)


@pytest.mark.unit
def test_the_best_cost_at_a_tie_is_the_faster_and_a_cpu_only_quantization_is_never_carried():
    """Two configurations at 0.70 USD: the faster holds the best cost, as the report prefers it. A cheaper dynamic int8
    one holds the best cost but has no GPU analogue: the cheapest one that has is carried, and the plan says so."""
    tied = [plan.Candidate(measured("batch8-bf16 on cpu"), True, Decimal("0.70"), "USD", "p", 2.3),
            plan.Candidate(measured("batch8-lengthgrouped on cpu"), True, Decimal("0.70"), "USD", "p", 1.9)]
    found = plan.basis(tied, 4000, Decimal(4))
    assert found.best.name == found.measured.name == "batch8-lengthgrouped on cpu" and not found.notes
    int8 = plan.Candidate(measured("batch8-int8 on cpu", "dynamic-int8"), True, Decimal("0.50"), "USD", "p", 1.5)
    found = plan.basis([*tied, int8], 4000, Decimal(4))
    assert (found.best.name, found.measured.name) == ("batch8-int8 on cpu", "batch8-lengthgrouped on cpu")
    [note] = found.notes
    assert note == ("batch8-int8 on cpu holds the best cost but cannot be carried to a GPU (its quantization "
                    "dynamic-int8 has no GPU analogue): batch8-lengthgrouped on cpu is carried")


@pytest.mark.unit
def test_the_device_table_names_a_dated_public_source_for_every_row_and_leaves_missing_figures_empty():
    required = {("T4", 16), ("L4", 24), ("A10G", 24), ("L40S", 48), ("A100", 40), ("A100-80GB", 80), ("H100", 80),
                ("H200", 141), ("B200", 180), ("RTX4090", 24), ("MI300X", 192)}
    assert required <= {(s.accelerator, s.memory_gib) for s in SPECS}
    for spec in SPECS:
        assert "https://" in spec.source and spec.as_of == dt.date(2026, 12, 3) and spec.bandwidth_gbps > 0
        assert all(value is None or value > 0 for _, value in spec.peaks)
    t4 = next(s for s in SPECS if s.accelerator == "T4")
    assert (t4.peak("fp32"), t4.peak("bf16"), t4.peak("fp16")) == (8.1, None, 65.0)  # Turing has no BF16


@pytest.mark.unit
def test_a_peak_of_zero_is_refused_a_missing_one_is_an_empty_cell(tmp_path):
    head = ",".join(devices.SPEC_COLUMNS)
    (tmp_path / "zero.csv").write_text(f"{head}\nX1,24,0,,,,,,300,2026-12-03,a datasheet\n")
    with pytest.raises(GpucostError, match=r"zero.csv:2: fp32_tflops '0' must be > 0 \(leave the cell empty"):
        devices.load_device_specs([tmp_path / "zero.csv"])
    (tmp_path / "mine.csv").write_text(f"{head}\nL4,24,31,,,,,,300,2026-12-03,our own measurement\n")
    mine = devices.load_device_specs([shipped.shipped(shipped.DEVICE_SPECS), tmp_path / "mine.csv"])
    assert next(s for s in mine if s.accelerator == "L4").peak("fp32") == 31.0  # the user's row replaces the shipped


@pytest.mark.unit
def test_the_names_table_tells_which_a100_a_row_is_and_an_unnamed_a100_is_not_guessed():
    assert devices.spec_for(TABLES, "a100", ("NVIDIA A100-SXM4-40GB",))[0].bandwidth_gbps == 1555
    assert devices.spec_for(TABLES, "a100-80gb", ("NVIDIA A100-SXM4-80GB",))[0].memory_gib == 80
    assert devices.spec_for(TABLES, "rtx-4090", ("NVIDIA GeForce RTX 4090",))[0].accelerator == "RTX4090"
    assert devices.spec_for(TABLES, "mi300x", ())[0].memory_gib == 192  # no driver names: by its GPU id
    found, why = devices.spec_for(TABLES, "a100", ())
    assert found is None and "several devices in the device table (40 GiB and 80 GiB)" in why


@pytest.mark.unit
def test_dynamic_int8_has_no_gpu_peak_and_fp32_is_the_peak_without_tf32():
    a10g = next(s for s in SPECS if s.accelerator == "A10G")
    peak, why = devices.peak_for(a10g, "fp32", "dynamic-int8")
    assert peak is None and "no GPU analogue here (dynamic int8 quantization runs on the CPU only)" in why
    fp32 = ("the fp32 dense peak 31.2 TFLOP/s (no TF32: torch's default float32 matmul precision 'highest')")
    assert devices.peak_for(a10g, "fp32", "none") == (31.2e12, fp32)
    assert devices.peak_for(a10g, "bf16", "none")[0] == 125e12


@pytest.mark.unit
def test_a_report_with_nothing_priced_can_name_what_the_catalog_prices_and_the_plan_command():
    hint = plan.priced_devices_hint(load_catalog(CATALOG), "gpucost-demo", ["catalog/labkit-2026-09-24.csv"],
                                    protocol_path="projects/protocol-demo.yaml")
    assert hint == ("Catalog 2026-09-24 prices b200 (2 GPUs per lot), rtx-4090 (1 GPU per lot): `gpucost fleet plan "
                    "--experiment gpucost-demo --protocol projects/protocol-demo.yaml --catalog "
                    "catalog/labkit-2026-09-24.csv` says which of them are worth measuring (a lower bound per offer, "
                    "never a decision).")


@pytest.mark.integration
def test_a_plan_over_skypilots_own_import_of_the_seeded_catalog_keeps_the_a10g_and_drops_the_8_gpu_lot(experiment,
                                                                                                        tmp_path):
    """The same verdicts as above, the catalog imported by the real SkyPilot (`.venv-market`) from the seeded home."""
    from tests.skypilot_home import skypilot_home
    from tests.test_market import import_skypilot, market_gpucost

    if market_gpucost("sky") is None:
        pytest.skip("SkyPilot is installed neither in .venv-market nor here (make install builds .venv-market)")
    home = skypilot_home(tmp_path / "home", dt.date(2026, 11, 28))
    done = import_skypilot(home, tmp_path / "aws.csv", "--clouds", "aws")
    assert done.returncode == 0, done.stderr[-2000:]
    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra=ON_L4)
    result = run_plan("--catalog", str(gcp_l4(tmp_path, "3.00")), "--catalog", str(tmp_path / "aws.csv"))
    assert result.exit_code == 0, result.output
    assert "verdict: worth measuring: its bound 4.02 USD beats" in block(result.output, "a10g x1")
    assert "verdict: not worth measuring: even its bound 131.10 USD" in block(result.output, "a100 x8")
    assert "gpucost fleet launch --gpus A10G --clouds aws" in result.output
