"""A fleet: one campaign per GPU type launched through SkyPilot into one tracking server (docs/fleet.md).

The pure rules (reachable store, secrets, worst case, the task) are unit tests. The real SkyPilot (.venv-market)
accepts the tasks a dry run writes, from an offline catalog seeded in a temporary HOME. The launches themselves run
through SkyPilot's stand-in (tests/fakes/sky), whose managed jobs run each task's `run` script here against a local
MLflow server: two GPU types, two campaigns, one preempted and resumed, then one report over both.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import budget, tracking_uri
from gpucost_mlflow.core.fleet.jobs import Job, parse_gpus
from gpucost_mlflow.core.fleet.task import Campaign, Inputs, Machine, task_config
from gpucost_mlflow.core.money.market import Interruptions, Offer
from tests.helpers import ROOT, cli_runner, write_protocol

FAKES = ROOT / "tests" / "fakes"
SECRET_URI = "postgresql://gpucost:s3cret@db.example:5432/mlflow"
L4 = Offer("aws", "g6.xlarge", "us-east-1", "L4", 1, 24.0, Decimal("0.8048"), Decimal("0.3501"))
A10G_EAST = Offer("aws", "g5.xlarge", "us-east-1", "A10G", 1, 24.0, Decimal("1.006"), Decimal("0.4012"))
A10G_WEST = Offer("aws", "g5.xlarge", "eu-west-1", "A10G", 1, 24.0, Decimal("1.258"), Decimal("0.5012"))


@pytest.mark.unit
@pytest.mark.parametrize("uri", ["", "sqlite:///mlflow.db", "/home/me/mlruns", "file:///home/me/mlruns", "mlflow.db",
                                 "http://localhost:5000", "http://127.0.0.1:5000", "https://[::1]:8443",
                                 "http://0.0.0.0:5000", "postgresql://gpucost:pw@localhost:5432/mlflow",
                                 "postgresql+psycopg://u@127.0.0.2/db"])
def test_a_store_on_this_machine_is_unreachable_from_the_fleets_machines(uri):
    assert tracking_uri.unreachable(uri)


@pytest.mark.unit
@pytest.mark.parametrize("uri", ["https://mlflow.example.com", "http://10.0.0.5:5000", SECRET_URI, "databricks://p"])
def test_a_server_elsewhere_is_reachable(uri):
    assert tracking_uri.unreachable(uri) == ""


@pytest.mark.unit
def test_the_uri_is_said_without_its_password_and_credentials_travel_as_secrets():
    assert tracking_uri.redacted(SECRET_URI) == "postgresql://gpucost:***@db.example:5432/mlflow"
    assert "s3cret" not in tracking_uri.unreachable("postgresql://gpucost:s3cret@localhost/mlflow")
    environ = {"MLFLOW_TRACKING_URI": SECRET_URI, "MLFLOW_TRACKING_PASSWORD": "pw", "HOME": "/root", "OTHER": "x"}
    assert tracking_uri.secrets(environ) == {"MLFLOW_TRACKING_URI": SECRET_URI, "MLFLOW_TRACKING_PASSWORD": "pw"}


@pytest.mark.unit
@pytest.mark.parametrize("text", ["", "L4,,A10G", "L4,l4"])
def test_gpu_lists_that_name_nothing_or_twice_are_refused(text):
    with pytest.raises(GpucostError):
        parse_gpus(text)


@pytest.mark.unit
def test_the_worst_case_is_the_dearest_offer_for_setup_and_campaign_limits():
    worst = budget.worst_case(Job("A10G"), [L4, A10G_EAST, A10G_WEST], max_hours=Decimal(2), setup_hours=Decimal("0.5"),
                              spot=False, interruptions=None, clouds="aws")
    assert (worst.offer, worst.hours, worst.cost) == (A10G_WEST, Decimal("2.5"), Decimal("3.15"))  # 3.145 rounded up
    assert "aws g5.xlarge in eu-west-1" in worst.line()


@pytest.mark.unit
def test_a_spot_worst_case_counts_a_whole_window_per_p90_interruption():
    assumption = Interruptions(Decimal(2), Decimal(0), "last month on aws")
    worst = budget.worst_case(Job("A10G"), [A10G_EAST, A10G_WEST], max_hours=Decimal(2), setup_hours=Decimal("0.5"),
                              spot=True, interruptions=assumption, clouds="aws")
    # Poisson at 2 a day over 2 h: P(N <= 0) = 0.846 < 0.9, P(N <= 1) = 0.988: one interruption at P90, two windows.
    assert (worst.price, worst.hours, worst.cost) == (Decimal("0.5012"), Decimal(5), Decimal("2.51"))
    with pytest.raises(GpucostError, match="--interruptions-per-day"):
        budget.worst_case(Job("A10G"), [A10G_EAST], max_hours=Decimal(2), setup_hours=Decimal("0.5"), spot=True,
                          interruptions=None, clouds="aws")


@pytest.mark.unit
def test_the_worst_case_with_the_race_scales_the_campaign_by_the_races_fewest_passes():
    worst = budget.worst_case(Job("A10G"), [A10G_EAST, A10G_WEST], max_hours=Decimal(2), setup_hours=Decimal("0.5"),
                              spot=False, interruptions=None, clouds="aws")
    # 6 configurations x 5 passes = 30; the race's fewest: five stop after round 2, the best runs its 5: 15 of 30.
    # 0.5 h setup + 2 h x 15/30 = 1.5 h x 1.258 USD/h = 1.887 -> 1.89 USD, beside 3.15 USD without the race.
    raced = budget.with_race(worst, budget.Design(6, 5, 2))
    assert (raced.passes, raced.hours, raced.cost) == (15, Decimal("1.5"), Decimal("1.89"))
    assert raced.line() == ("A10G:1 with the race (from round 2): at most 1.89 USD (1.5 h x 1.258 USD/h: setup 0.5 h + "
                            "campaign 2 h x 15/30 passes; every configuration but the best stops at round 2, the best "
                            "runs its 5, passes alike in duration)")
    assert budget.totals_line([worst], [raced]) == (
        "fleet worst case with the race: 1.89 USD (without it: 3.15 USD; --max-cost is checked without it, as the race "
        "stops only what the measurements allow)")
    assert budget.with_race(worst, budget.Design(6, 5, None)) is None and budget.totals_line([worst], []) == ""
    one = budget.with_race(worst, budget.Design(1, 5, 2))  # one configuration: the race stops none of its passes
    assert one.cost == worst.cost and one.line() == ("A10G:1 with the race (from round 2): the same 3.15 USD, the race "
                                                     "stops none of 1 configuration's 5 passes (the best runs all its "
                                                     "passes)")
    # on spot each of the two P90 windows holds the setup and the raced campaign: 2 x 1.5 h x 0.5012 = 1.5036 -> 1.51
    spot = budget.worst_case(Job("A10G"), [A10G_EAST, A10G_WEST], max_hours=Decimal(2), setup_hours=Decimal("0.5"),
                             spot=True, interruptions=Interruptions(Decimal(2), Decimal(0), "last month on aws"),
                             clouds="aws")
    raced_spot = budget.with_race(spot, budget.Design(6, 5, 2))
    assert (raced_spot.hours, raced_spot.cost) == (Decimal(3), Decimal("1.51"))
    assert "2 x (setup 0.5 h + campaign 2 h x 15/30 passes)" in raced_spot.line()


@pytest.mark.unit
def test_a_fleet_over_budget_is_refused_with_each_gpus_figure():
    worsts = [budget.worst_case(Job(o.accelerator), [o], max_hours=Decimal(10), setup_hours=Decimal("0.5"), spot=False,
                                interruptions=None, clouds="aws") for o in (L4, A10G_EAST)]
    with pytest.raises(GpucostError) as refused:
        budget.check(worsts, Decimal(15))
    assert str(refused.value) == ("the fleet's worst case 19.03 USD exceeds --max-cost 15 USD (L4:1 8.46 USD; "
                                  "A10G:1 10.57 USD); nothing launched")
    budget.check(worsts, Decimal("19.03"))


@pytest.mark.unit
def test_an_unknown_gpu_or_count_has_no_offer_and_is_refused():
    with pytest.raises(GpucostError, match="no offer of H100:1 in SkyPilot's catalog of aws"):
        budget.worst_case(Job("H100"), [L4], max_hours=Decimal(1), setup_hours=Decimal(1), spot=False,
                          interruptions=None, clouds="aws")
    with pytest.raises(GpucostError, match="no offer of L4:2"):
        budget.worst_case(Job("L4", 2), [L4], max_hours=Decimal(1), setup_hours=Decimal(1), spot=False,
                          interruptions=None, clouds="aws")


def _inputs(tmp_path: Path) -> Inputs:
    files = {"wheel": "gpucost_mlflow-0.1.0-py3-none-any.whl", "corpus": "comparison.jsonl", "protocol": "protocol.yaml",
             "variants": "variants.yaml"}
    for name in files.values():
        (tmp_path / name).write_text("x")
    (tmp_path / "model").mkdir(exist_ok=True)
    return Inputs(*(tmp_path / files[n] for n in ("wheel", "corpus")), tmp_path / "model",
                  tmp_path / files["protocol"], tmp_path / files["variants"])


@pytest.mark.unit
def test_a_job_task_installs_this_wheel_mounts_the_inputs_and_runs_peak_then_the_campaign_under_its_limit(tmp_path):
    machine = Machine(("aws", "gcp"), True, "2.13.0", setup_hours=Decimal("0.5"), max_hours=Decimal("1.5"))
    config = task_config("f0123456789", Job("MI300X", 2), machine=machine, inputs=_inputs(tmp_path),
                         campaign=Campaign("fleet", series="batch"), secret_names=["MLFLOW_TRACKING_URI"])
    assert config["name"] == "gpucost-f0123456789-mi300x"
    assert config["resources"] == {"accelerators": "MI300X:2", "use_spot": True,
                                   "any_of": [{"infra": "aws"}, {"infra": "gcp"}]}
    assert config["file_mounts"]["~/gpucost/wheel/gpucost_mlflow-0.1.0-py3-none-any.whl"] == str(
        tmp_path / "gpucost_mlflow-0.1.0-py3-none-any.whl")
    assert config["file_mounts"]["~/gpucost/model"] == str(tmp_path / "model")
    assert "timeout 1800 " in config["setup"] and "torch==2.13.0 --index-url https://download.pytorch.org" in config["setup"]
    assert '"$HOME/gpucost/wheel/gpucost_mlflow-0.1.0-py3-none-any.whl[rocm,team]"' in config["setup"]
    run = config["run"].splitlines()
    assert run[3] == "gpucost doctor --peak --if-missing"
    assert run[4].startswith("timeout --signal=INT --kill-after=120 5400 gpucost fleet job --fleet f0123456789 --gpu "
                             "MI300X --experiment fleet --series batch --protocol \"$HOME/gpucost/protocol/protocol.yaml\"")
    assert config["secrets"] == {"MLFLOW_TRACKING_URI": None}
    bad = _inputs(tmp_path)
    (tmp_path / "my corpus.jsonl").write_text("x")
    with pytest.raises(GpucostError, match="rename or copy it"):
        Inputs(bad.wheel, tmp_path / "my corpus.jsonl", bad.model, bad.protocol, bad.variants).check()


@pytest.mark.unit
def test_user_code_the_variants_file_names_travels_where_its_relative_path_finds_it(tmp_path):
    from gpucost_mlflow.core.fleet.task import user_code
    from gpucost_mlflow.core.inputs.variants import load_variants
    from tests.helpers import VARIANTS

    code = user_code(load_variants(VARIANTS), VARIANTS)
    assert code == (("../examples/my_workload.py", (VARIANTS.parent / "../examples/my_workload.py").resolve()),)
    plain = _inputs(tmp_path)
    mounts = Inputs(plain.wheel, plain.corpus, plain.model, plain.protocol, plain.variants, code).mounts()
    assert mounts["~/gpucost/variants/up/variants.yaml"] == str(plain.variants)
    assert mounts["~/gpucost/variants/examples/my_workload.py"] == str(code[0][1])  # ../ from variants/up/
    moved = tmp_path / "moved.yaml"
    moved.write_text(VARIANTS.read_text().replace("python:../examples/my_workload.py", f"python:{code[0][1]}"))
    with pytest.raises(GpucostError, match="write it relative to the variants file"):
        user_code(load_variants(moved), moved)


# --- through SkyPilot's stand-in (tests/fakes/sky) -------------------------------------------------------------------


@pytest.fixture
def fake_sky(tmp_path, monkeypatch):
    """SkyPilot's stand-in importable here and by every process the test starts; its state under tmp_path/sky."""
    state = tmp_path / "sky"
    monkeypatch.setenv("FAKE_SKY_STATE", str(state))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAKES), os.environ.get("PYTHONPATH", "")])))
    monkeypatch.syspath_prepend(str(FAKES))
    for name in [m for m in sys.modules if m == "sky" or m.startswith("sky.")]:
        monkeypatch.delitem(sys.modules, name)
    yield state
    for name in [m for m in sys.modules if m == "sky" or m.startswith("sky.")]:
        del sys.modules[name]  # the stand-in leaves with its test


def calls(state: Path) -> list[dict]:
    path = state / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def plain_inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A corpus file, a model folder and a protocol that a launch mounts without reading them (the unit tests)."""
    (tmp_path / "comparison.jsonl").write_text('{"id": "1", "text": "a"}\n')
    (tmp_path / "model").mkdir(exist_ok=True)
    return tmp_path / "comparison.jsonl", tmp_path / "model", write_protocol(tmp_path / "p.yaml")


def launch_args(tmp_path: Path, corpus: Path, model: Path, protocol: Path, *extra: str) -> list[str]:
    wheel = tmp_path / "gpucost_mlflow-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a wheel stands in")
    return ["fleet", "launch", "--gpus", "L4,A10G", "--clouds", "aws", "--max-hours", "1", "--max-cost", "10",
            "--variants", "batch8", "--experiment", "fleet", "--protocol", str(protocol), "--corpus", str(corpus),
            "--model", str(model), "--wheel", str(wheel), "--torch", "2.13.0", "--out", str(tmp_path / "out"), *extra]


@pytest.mark.unit
@pytest.mark.parametrize("change, message", [
    ({"MLFLOW_TRACKING_URI": "sqlite:///mlflow.db"}, "could not reach the tracking store: sqlite:///mlflow.db is a store"),
    ({"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000"}, "is this machine's loopback"),
    ({"--max-cost": "2"}, "the fleet's worst case 2.72 USD exceeds --max-cost 2 USD (L4:1 1.21 USD; A10G:1 1.51 USD)"),
    ({"--max-cost": "2", "--dry-run": None}, "the fleet's worst case 2.72 USD exceeds --max-cost 2 USD"),
    ({"--gpus": "L4,H100"}, "no offer of H100:1 in SkyPilot's catalog of aws"),
    ({"--variants": "batch8,batch99"}, "unknown variant 'batch99'"),
    ({"--spot": None}, "--spot needs --interruptions-per-day"),
])
def test_bad_fleet_input_is_one_line_exit_2_and_nothing_is_launched(fake_sky, tmp_path, monkeypatch, change, message):
    from gpucost_mlflow.cli import main

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com")
    args = launch_args(tmp_path, *plain_inputs(tmp_path))
    for key, value in change.items():
        if key.startswith("--") and value is None:
            args.append(key)
        elif key.startswith("--"):
            args[args.index(key) + 1] = value
        else:
            monkeypatch.setenv(key, value)
    result = cli_runner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.count("Error:") == 1
    assert not [c for c in calls(fake_sky) if c["call"] == "jobs.launch"] and not (tmp_path / "out").exists()


@pytest.mark.unit
def test_a_dry_run_gives_the_worst_case_with_the_protocols_race_beside_the_one_without(fake_sky, tmp_path, monkeypatch):
    """L4 at 0.8048 and A10G at 1.006 USD/h, 0.5 h setup + 1 h campaign: 1.21 + 1.51 = 2.72 USD without the race.
    Three variants, five passes, a race from round 2: 2 x 2 + 5 = 9 of 15 passes, 0.6 h of campaign: 1.1 h each,
    0.89 + 1.11 = 2.00 USD with it."""
    from gpucost_mlflow.cli import main

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com")
    corpus, model, protocol = plain_inputs(tmp_path)
    protocol.write_text(protocol.read_text() + "race: {from_round: 2}\n")
    args = launch_args(tmp_path, corpus, model, protocol, "--dry-run")
    args[args.index("--variants") + 1] = "batch1,batch4,batch8"
    result = cli_runner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "L4:1 with the race (from round 2): at most 0.89 USD (1.1 h x 0.8048 USD/h: setup 0.5 h + campaign 1 h x " \
           "9/15 passes;" in result.output
    assert "A10G:1 with the race (from round 2): at most 1.11 USD" in result.output
    assert "fleet worst case: 2.72 USD of --max-cost 10 USD" in result.output
    assert "fleet worst case with the race: 2.00 USD (without it: 2.72 USD;" in result.output


@pytest.mark.unit
def test_without_skypilot_the_fleet_is_one_line_with_its_install_command(tmp_path, monkeypatch):
    from gpucost_mlflow.cli import main

    monkeypatch.setitem(sys.modules, "sky", None)  # `import sky` raises ImportError
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com")
    result = cli_runner().invoke(main, launch_args(tmp_path, *plain_inputs(tmp_path)))
    assert result.exit_code == 2
    assert "sky is not installed here: pip install 'gpucost-mlflow[fleet]' (docs/fleet.md)" in result.output


@pytest.mark.unit
def test_a_launch_where_mlflow_is_missing_is_one_line_and_launches_nothing(fake_sky, tmp_path, monkeypatch):
    """SkyPilot alone (a venv like .venv-market) prices and writes a dry run, but a launch records the fleet run."""
    from gpucost_mlflow.cli import main

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com")
    monkeypatch.setitem(sys.modules, "mlflow", None)
    result = cli_runner().invoke(main, launch_args(tmp_path, *plain_inputs(tmp_path)))
    assert result.exit_code == 2 and result.output.count("Error:") == 1, result.output
    assert "mlflow is not installed here: pip install 'gpucost-mlflow[fleet]'" in result.output
    assert not [c for c in calls(fake_sky) if c["call"] == "jobs.launch"]


@pytest.mark.unit
def test_the_tracking_password_reaches_no_file_run_or_printed_line(fake_sky, tmp_path, monkeypatch, store):
    """The fleet run goes to a local store standing for the team's server (db.example is not reachable from here);
    the stand-in records the launches without running them."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.cli import main
    from gpucost_mlflow.tracking import store as store_module

    monkeypatch.setenv("FAKE_SKY_HOLD", "1")
    monkeypatch.setattr(store_module, "check", lambda: None)
    monkeypatch.setattr(store_module, "client", lambda: MlflowClient(tracking_uri=store))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", SECRET_URI)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "s3cret")
    result = cli_runner().invoke(main, launch_args(tmp_path, *plain_inputs(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "s3cret" not in result.output and "fleet f" in result.output
    launched = [c for c in calls(fake_sky) if c["call"] == "jobs.launch"]
    assert [c["secret_names"] for c in launched] == [["MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_URI"]] * 2
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert len([p for p in written if p.suffix == ".yaml"]) == 2
    assert not [p for p in written if b"s3cret" in p.read_bytes()]
    client = MlflowClient(tracking_uri=store)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert runs and not [r for r in runs if "s3cret" in json.dumps([r.data.params, r.data.tags])]
    fleet = runs[0].data
    assert fleet.params["gpus"] == "L4,A10G" and fleet.params["worst_case"] == "2.72"
    assert fleet.tags["gpucost.fleet.L4.job_id"] == "1" and fleet.tags["gpucost.fleet.A10G.job_id"] == "2"
    assert fleet.tags["gpucost.fleet.A10G.worst_offer"] == "aws g5.xlarge in us-east-1 at 1.006/h"


# --- the real SkyPilot -------------------------------------------------------------------------------------------------


def market_python() -> Path | None:
    """.venv-market's Python when it imports SkyPilot (make install builds it)."""
    python = ROOT / ".venv-market" / "bin" / "python"
    if python.is_file() and subprocess.run([str(python), "-c", "import sky"], capture_output=True,
                                           check=False).returncode == 0:
        return python
    return None


@pytest.mark.integration
def test_a_dry_run_writes_one_task_per_gpu_type_that_skypilot_itself_accepts(tmp_path, corpus_dir, model_dir):
    from tests.skypilot_home import AWS_VMS, skypilot_home

    python = market_python()
    if python is None:
        pytest.skip("SkyPilot is not installed in .venv-market (make install builds it)")
    one_a100 = ("p4d.test-1gpu", "A100", 1, 12, 144, 40960, "4.0966", "1.6", "us-east-1", "use1-az1")  # a test row
    home = skypilot_home(tmp_path / "home", dt.date(2026, 11, 28), [*AWS_VMS, one_a100])
    env = dict(os.environ, HOME=str(home), MLFLOW_TRACKING_URI=SECRET_URI)
    protocol = write_protocol(tmp_path / "protocol.yaml")
    common = ["--clouds", "aws", "--max-hours", "2", "--torch", "2.13.0", "--variants", "batch8,batch4",
              "--experiment", "fleet", "--protocol", str(protocol), "--corpus", str(corpus_dir / "comparison.jsonl"),
              "--model", str(model_dir), "--dry-run"]

    def dry_run(out: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(python.parent / "gpucost"), "fleet", "launch", *common, "--out", str(out), *args],
                              env=env, capture_output=True, text=True, timeout=300, check=False)

    done = dry_run(tmp_path / "out", "--gpus", "A10G,A100", "--max-cost", "20")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "A100:1: at most 10.25 USD (2.5 h x 4.0966 USD/h" in done.stdout
    assert "A10G:1: at most 3.15 USD (2.5 h x 1.258 USD/h" in done.stdout and "s3cret" not in done.stdout + done.stderr
    tasks = sorted((tmp_path / "out").glob("*.yaml"))
    assert [p.name.rsplit("-", 1)[1] for p in tasks] == ["a100.yaml", "a10g.yaml"]
    check = ("import sys, sky\nfor path in sys.argv[1:]:\n    t = sky.Task.from_yaml(path)\n"
             "    r = list(t.resources)[0]\n"
             "    print(t.name, r.accelerators, r.cloud, sorted(t.file_mounts), t.setup.count('pip'), 'doctor' in t.run)\n")
    accepted = subprocess.run([str(python), "-c", check, *map(str, tasks)], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    lines = accepted.stdout.splitlines()
    assert lines[0].split(" ", 1)[1].startswith("{'A100': 1} AWS ['~/gpucost/corpus/comparison.jsonl', '~/gpucost/model'")
    assert all(line.endswith(" 2 True") for line in lines) and "{'A10G': 1} AWS" in lines[1]
    for task in tasks:
        config = yaml.safe_load(task.read_text())
        assert config["secrets"] == {"MLFLOW_TRACKING_URI": None} and "s3cret" not in task.read_text()
    assert len(list((tmp_path / "out" / "wheel").glob("gpucost_mlflow-*.whl"))) == 1  # built from this checkout

    # A name SkyPilot's catalog does not know (over budget, the same refusal: the stand-in's unit test above).
    refused = dry_run(tmp_path / "refused", "--gpus", "A10G,NOPE", "--max-cost", "20")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr[-2000:]
    assert "no offer of NOPE:1 in SkyPilot's catalog of aws" in refused.stderr and not (tmp_path / "refused").exists()


# --- a whole fleet through the stand-in ------------------------------------------------------------------------------


def this_machines_address() -> str | None:
    """An address of this machine other than the loopback (a fleet refuses a loopback store), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.254.254.254", 1))  # no packet is sent: the kernel only picks the route's address
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def seed_peaks(names: list[str]) -> None:
    """The dense-matmul peaks of the stand-in devices in the session's cache, so each job's `doctor --peak
    --if-missing` finds them instead of measuring this CPU for half a minute per device."""
    import torch

    from gpucost_mlflow.execution import peak

    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    peak.save([peak.Peak(name, torch.__version__, torch.get_num_threads(), precision, 1e11, 512, now)
               for name in names for precision in peak.PRECISIONS])


def wait_for(predicate, timeout_s: float, what: str, logs: Path):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.3)
    tails = "\n".join(f"{p}: {p.read_text()[-1500:]}" for p in sorted(logs.rglob("*.log")))
    raise AssertionError(f"{what} did not happen within {timeout_s} s\n{tails}")


@pytest.mark.integration
def test_two_gpu_types_make_two_campaigns_in_one_store_a_preempted_one_resumes_and_one_report_compares_them(
        fake_sky, tmp_path, monkeypatch, corpus_dir, model_dir):
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.core.inputs import shipped
    from gpucost_mlflow.core.money import market
    from tests.helpers import attempts_table
    from tests.servers import MlflowServer

    address = this_machines_address()
    if address is None:
        pytest.skip("this machine has no address but the loopback, which a fleet refuses")
    server = MlflowServer(f"sqlite:///{tmp_path / 'server' / 'mlflow.db'}", tmp_path / "server", host=address).start()
    try:
        names = {"L4": "NVIDIA L4", "A10G": "NVIDIA A10G"}
        seed_peaks(list(names.values()))
        monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
        monkeypatch.setenv("FAKE_SKY_DEVICE_NAMES", json.dumps(names))
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        # With a plan, so the report prices and decides; two jobs share this CPU, so a pass of a few milliseconds may
        # take forty times another: the spread rule is left wide, the decision is about the money. Every measured pass
        # sleeps 2 s after its first batch (the jobs inherit GPUCOST_FAULT), so the preemption below, sent once the
        # third pass is seen running, lands inside it (a pass of a few milliseconds once ended and was spooled before
        # the kill, and the test then saw no lost pass); a sleep leaves the CPU to the other tests.
        monkeypatch.setenv("GPUCOST_FAULT", "stall@1:2")
        protocol = write_protocol(tmp_path / "protocol.yaml")
        protocol.write_text(protocol.read_text().replace("max_spread_ratio: 10 ", "max_spread_ratio: 1000 ")
                            + "plan: {start: '2026-12-03T09:00:00+01:00', setup_hours: 0.5, waiting_hours: 0, "
                            "planned_restarts: 0}\n")
        launched = subprocess.run([str(Path(sys.executable).parent / "gpucost"),
                                   *launch_args(tmp_path, corpus_dir / "comparison.jsonl", model_dir, protocol)],
                                  capture_output=True, text=True, timeout=120, check=False)
        assert launched.returncode == 0, launched.stderr[-2000:]
        fleet_id = re.search(r"fleet (f[0-9a-f]{10}) launched", launched.stdout).group(1)
        assert "L4:1: managed job 1" in launched.stdout and "A10G:1: managed job 2" in launched.stdout

        client = MlflowClient(server.uri)
        jobs = fake_sky / "jobs"

        def third_pass_running():
            experiment = client.get_experiment_by_name("fleet")
            return experiment and client.search_runs([experiment.experiment_id], filter_string=(
                "tags.`gpucost.fleet.gpu` = 'A10G' AND params.`gpucost.pass_index` = '3' AND "
                "tags.`gpucost.status` = 'running'"))

        wait_for(third_pass_running, 180, "the A10G job's third pass", jobs)
        (jobs / "2" / "preempt").touch()  # its machine is lost mid-pass; SkyPilot relaunches the task

        def finished():
            states = [json.loads((jobs / str(i) / "state.json").read_text())["status"] for i in (1, 2)]
            return all(s in ("SUCCEEDED", "FAILED") for s in states) and states
        assert wait_for(finished, 300, "both jobs' end", jobs) == ["SUCCEEDED", "SUCCEEDED"], \
            (jobs / "2" / "run-1.log").read_text()[-3000:]

        table = attempts_table("fleet")
        experiment_id = client.get_experiment_by_name("fleet").experiment_id
        for gpu, device in names.items():
            campaign = client.search_runs([experiment_id], filter_string=(
                f"tags.`gpucost.fleet.gpu` = '{gpu}' AND tags.`gpucost.role` = 'campaign'"))
            assert len(campaign) == 1 and campaign[0].info.status == "FINISHED"
            assert campaign[0].data.tags["gpucost.fleet.id"] == fleet_id
            rows = table[table["campaign_id"] == campaign[0].data.tags["gpucost.campaign_id"]]
            assert set(rows["device"]) == {device}
            accepted = rows[rows["status"] == "accepted"]
            assert len(accepted) == 5 and sorted(accepted["pass_index"]) == ["1", "2", "3", "4", "5"]
            passes = client.search_runs([experiment_id], filter_string=(
                f"tags.`gpucost.fleet.id` = '{fleet_id}' AND tags.`gpucost.fleet.gpu` = '{gpu}' AND "
                "params.`gpucost.role` = 'benchmark'"))
            assert len(passes) == len(rows)  # one filter finds a fleet's passes
        a10g = table[table["device"] == "NVIDIA A10G"]
        lost = a10g[a10g["status"] == "failed"]
        assert len(a10g) == 6 and len(lost) == 1 and lost["pass_index"].iloc[0] == "3"
        assert lost["reason"].iloc[0].startswith("interrupted (its machine was lost: SkyPilot relaunched job 2")
        assert lost["wall_s"].iloc[0] > 0  # its rental time counts as comparison time
        retry = a10g[(a10g["pass_index"] == "3") & (a10g["status"] == "accepted")]
        assert retry["attempt"].iloc[0] == "2"

        env = dict(os.environ)
        gpucost = str(Path(sys.executable).parent / "gpucost")
        status = subprocess.run([gpucost, "fleet", "status", "--fleet", fleet_id, "--experiment", "fleet"], env=env,
                                capture_output=True, text=True, timeout=120, check=False)
        assert status.returncode == 0, status.stderr[-2000:]
        a10g_line = next(line for line in status.stdout.splitlines() if line.startswith("A10G:"))
        assert "job 2 SUCCEEDED; aws g5.xlarge in us-east-1" in a10g_line
        assert "5 done (5 accepted, 0 pending, 0 failed), 0 left" in a10g_line
        assert "; realized " in a10g_line and ": 2 attempts (1 recovery), setup included, " in a10g_line
        assert "(aws: min 60 s, per 1 s each attempt) at 1.006 USD/h" in a10g_line
        fleet_run = client.search_runs([experiment_id], filter_string="tags.`gpucost.role` = 'fleet'")[0]
        assert fleet_run.data.tags["gpucost.fleet.A10G.offer"] == "aws g5.xlarge in us-east-1"
        assert fleet_run.data.tags["gpucost.fleet.A10G.recoveries"] == "1"

        catalog = market.catalog_text([L4, A10G_EAST], version="skypilot-v8-2026-11-28", source="SkyPilot catalog",
                                      as_of={"aws": dt.date(2026, 11, 28)},
                                      names=market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES)]),
                                      terms=market.load_terms(shipped.shipped(shipped.BILLING_TERMS)), interruptions=None)
        (tmp_path / "aws.csv").write_text(catalog.text)
        report = subprocess.run([gpucost, "report", "--experiment", "fleet", "--protocol", str(protocol),
                                 "--catalog", str(tmp_path / "aws.csv"), "--out", str(tmp_path / "report"), "--no-log"],
                                env=env, capture_output=True, text=True, timeout=300, check=False)
        assert report.returncode == 0, report.stderr[-2000:]
        page = (tmp_path / "report" / "report.md").read_text()
        assert "NVIDIA L4" in page and "NVIDIA A10G" in page
        assert "on aws g6.xlarge in us-east-1" in page and "on aws g5.xlarge in us-east-1" in page
        # The same work on CPUs named L4 and A10G: durations alike, the A10G 25 % dearer an hour and its lost pass
        # billed too. The L4 is cheaper whatever the noise: decided, and the card rents and runs the L4, nothing else.
        card = {line.split(":**")[0][4:]: line.split(":** ", 1)[1] for line in page.splitlines()
                if line.startswith("- **") and ":** " in line}
        assert "Decision: batch8 on NVIDIA L4, l4 hourly" in page, page[:3000]
        assert card["Rent"].split("; price as of 2026-11-28 (")[0].endswith("on aws g6.xlarge in us-east-1, at 0.8048 USD per lot-hour")
        assert card["Run"].startswith("batch8 on L4 (no cost per result yet")
        assert "A10G" not in card["Rent"] + card["Run"]
        assert card["Runner-up"].startswith("batch8 on A10G at "), card["Runner-up"]

        down = subprocess.run([gpucost, "fleet", "down", "--fleet", fleet_id, "--experiment", "fleet"], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert down.returncode == 0 and "A10G: managed job 2 cancelled" in down.stdout, down.stderr[-2000:]
        assert [c["job_ids"] for c in calls(fake_sky) if c["call"] == "jobs.cancel"] == [[1, 2]]
    finally:
        server.stop()
