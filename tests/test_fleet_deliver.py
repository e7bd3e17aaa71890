"""A delivery fleet (`gpucost fleet deliver`, docs/fleet.md "Deliver"): the decision's configuration delivered on the
lots its plan rents, one SkyPilot managed job per lot told its rank; refused in one line when there is nothing to
deliver or the worst case is above --max-cost; a dry run's task accepted by the real SkyPilot offline."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import delivery
from tests.helpers import SHIPPED_PROTOCOL, VARIANTS, cli_runner
from tests.test_fleet import fake_sky, market_python  # noqa: F401 - the stand-in's fixture
from tests.test_fleet_plan import L4, L4_PASSES, NAMES, ON_L4

L4_AWS = ("g6.xlarge", "L4", 1, 4, 16, 24576, "0.8048", "0.3501", "us-east-1", "use1-az1")


@pytest.mark.unit
def test_the_shares_of_every_rank_partition_the_corpora():
    names = [f"corpus-{n:02d}.jsonl" for n in range(12)]
    shares = [delivery.share(list(reversed(names)), rank, 3) for rank in range(3)]
    assert sorted(n for s in shares for n in s) == names and [len(s) for s in shares] == [4, 4, 4]
    assert shares[1] == ["corpus-01.jsonl", "corpus-04.jsonl", "corpus-07.jsonl", "corpus-10.jsonl"]
    with pytest.raises(GpucostError, match="rank 3 of 3"):
        delivery.share(names, 3, 3)


@pytest.mark.unit
def test_a_deliverable_is_keyed_by_its_corpus_and_the_decision_and_the_end_check_names_what_is_missing():
    assert delivery.key("f" * 64, "run1") == delivery.key("f" * 64, "run1") != delivery.key("f" * 64, "run2")
    found = delivery.completeness({"a": ("1", "2"), "b": ("3",), "c": ("4",), "d": ("5",)},
                                  {"a": [("2", "1")], "b": [("3",), ("3",)], "d": [("4",)]})
    assert (found.missing, found.twice, found.short, found.complete) == (("c",), ("b",), ("d",), False)
    assert delivery.completeness({"a": ("1",)}, {"a": [("1",)]}).complete


@pytest.mark.unit
@pytest.mark.parametrize("none, verdict, says", [
    ("undecided", None, "the decision is undecided, nothing to deliver"),
    ("nothing accepted", None, "no decision to deliver"),
    ("", "not yet confirmed", "the chosen configuration is not yet confirmed: `gpucost confirm --experiment e"),
])
def test_nothing_to_deliver_is_refused_in_one_line(none, verdict, says):
    with pytest.raises(GpucostError, match=None) as refused:
        delivery.refuse("the decision", none, verdict, "gpucost confirm --experiment e")
    assert str(refused.value).startswith(says) and "\n" not in str(refused.value)


def _aws_l4_catalog(tmp_path: Path) -> Path:
    from gpucost_mlflow.core.inputs import shipped
    from gpucost_mlflow.core.money import market

    text = market.catalog_text([market.Offer("aws", "g6.xlarge", "us-east-1", "L4", 1, 24.0, Decimal("0.8048"), None)],
                               version="skypilot-v8-2026-11-28", source="SkyPilot 0.14.1 catalog v8",
                               as_of={"aws": dt.date(2026, 11, 28)}, names=NAMES,
                               terms=market.load_terms(shipped.shipped(shipped.BILLING_TERMS)), interruptions=None)
    path = tmp_path / "aws.csv"
    path.write_text(text.text)
    return path


def _decided(experiment, tmp_path: Path, confirmed: bool) -> Path:
    """batch8 measured on an L4, priced from a SkyPilot import, the decision logged; confirmed when asked."""
    from gpucost_mlflow.cli import main

    for seconds in L4_PASSES:
        experiment("batch8", L4, seconds, metrics_extra=ON_L4)
    if confirmed:
        experiment("batch8", L4, 10.0, role="confirmation", fingerprint="c" * 64,
                   metrics_extra={**ON_L4, "measured_total_s": 660.0, "repetitions": 66})
    catalog = _aws_l4_catalog(tmp_path)
    logged = cli_runner().invoke(main, ["report", "--experiment", "scenario", "--protocol", str(SHIPPED_PROTOCOL),
                                        "--variants-file", str(VARIANTS), "--catalog", str(catalog),
                                        "--out", str(tmp_path / "report")])
    assert logged.exit_code == 0, logged.output
    return catalog


def _corpora(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "corpora"
    folder.mkdir(exist_ok=True)
    for n in range(count):
        (folder / f"corpus-{n:02d}.jsonl").write_text(json.dumps({"id": f"{n}-1", "text": "a"}) + "\n")
    return folder


def _deliver(tmp_path: Path, catalog: Path, *extra: str):
    from gpucost_mlflow.cli import main

    wheel = tmp_path / "gpucost_mlflow-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a wheel stands in")
    (tmp_path / "model").mkdir(exist_ok=True)
    return cli_runner().invoke(main, [
        "fleet", "deliver", "--experiment", "scenario", "--corpora", str(_corpora(tmp_path, 12)), "--protocol",
        str(SHIPPED_PROTOCOL), "--variants-file", str(VARIANTS), "--catalog", str(catalog), "--model",
        str(tmp_path / "model"), "--wheel", str(wheel), "--torch", "2.13.0", "--out", str(tmp_path / "out"), *extra])


@pytest.mark.unit
def test_an_unconfirmed_decision_is_refused_naming_the_confirm_command(fake_sky, experiment, tmp_path):  # noqa: F811
    catalog = _decided(experiment, tmp_path, confirmed=False)
    result = _deliver(tmp_path, catalog, "--max-cost", "100", "--dry-run")
    assert result.exit_code == 2 and result.output.count("Error:") == 1, result.output
    assert "the chosen configuration is not yet confirmed: `gpucost confirm --experiment scenario" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.unit
def test_a_confirmed_decision_is_written_one_worker_per_lot_and_refused_above_its_worst_case(
        fake_sky, experiment, tmp_path):  # noqa: F811
    catalog = _decided(experiment, tmp_path, confirmed=True)
    refused = _deliver(tmp_path, catalog, "--max-cost", "0.01", "--dry-run")
    assert refused.exit_code == 2 and refused.output.count("Error:") == 1, refused.output
    assert "the delivery's worst case " in refused.output and "exceeds --max-cost 0.01 USD" in refused.output
    assert not (tmp_path / "out").exists()

    done = _deliver(tmp_path, catalog, "--max-cost", "100", "--dry-run")
    assert done.exit_code == 0, done.output
    assert "worst case " in done.output.splitlines()[0] and "batch8 on NVIDIA L4, 1 worker of L4:1" in done.output
    task = yaml.safe_load((tmp_path / "out").glob("*-deliver.yaml").__next__().read_text())
    assert task["resources"] == {"accelerators": "L4:1", "use_spot": False, "infra": "aws/us-east-1"}
    assert "gpucost fleet worker " in task["run"] and "--variant batch8 " in task["run"]
    assert '--rank "$SKYPILOT_JOB_RANK" --workers "$SKYPILOT_NUM_JOBS"' in task["run"]
    shares = json.loads((tmp_path / "out" / "shares.json").read_text())
    assert sorted(n for s in shares.values() for n in s) == sorted(p.name for p in (tmp_path / "corpora").glob("*.jsonl"))

    python = market_python()
    if python is None:
        pytest.skip("SkyPilot is not installed in .venv-market (make install builds it)")
    from tests.skypilot_home import AWS_VMS, skypilot_home

    home = skypilot_home(tmp_path / "home", dt.date(2026, 11, 28), [*AWS_VMS, L4_AWS])
    check = ("import sys, sky\nt = sky.Task.from_yaml(sys.argv[1])\nr = list(t.resources)[0]\n"
             "print(t.name, r.accelerators, r.cloud, r.region, sorted(t.file_mounts))\n")
    path = next((tmp_path / "out").glob("*-deliver.yaml"))
    accepted = subprocess.run([str(python), "-c", check, str(path)], env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "HOME": str(home)},
                              capture_output=True, text=True, timeout=120, check=False)
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    assert "{'L4': 1} AWS us-east-1 ['~/gpucost/corpus/corpora'" in accepted.stdout
