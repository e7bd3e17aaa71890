"""The files gpucost ships (price list, ROCm matrices, default protocol and variants) are found outside the checkout."""

from __future__ import annotations

import configparser
import fnmatch
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from tests.helpers import ROOT

pytestmark = pytest.mark.unit


def test_each_shipped_default_is_the_repository_file_itself():
    for relative in (*shipped.DEFAULTS, shipped.TABLES):
        assert shipped.shipped(relative).resolve() == (ROOT / relative).resolve()


def test_a_default_missing_under_root_is_the_shipped_copy_a_present_one_wins(tmp_path):
    assert shipped.default_file(shipped.PROTOCOL, tmp_path) == shipped.shipped(shipped.PROTOCOL)
    assert shipped.default_file(shipped.PROTOCOL, ROOT) == ROOT / shipped.PROTOCOL
    assert shipped.default_file(Path("projects/mine.yaml"), tmp_path) == tmp_path / "projects/mine.yaml"


def test_each_shipped_table_is_the_newest_dated_file_of_its_stem():
    for table in (shipped.CATALOG, shipped.DEVICE_NAMES, shipped.BILLING_TERMS, shipped.DEVICE_SPECS):
        stem = table.name[:-len("-YYYY-MM-DD.csv")]
        assert table.name == max(path.name for path in (ROOT / shipped.TABLES).glob(f"{stem}-????-??-??.csv"))


def test_a_newer_dated_table_beside_an_older_one_is_the_one_read(tmp_path):
    for name in ("device-names-2026-12-02.csv", "device-names-2027-01-15.csv", "device-names-mine-2030-01-01.csv",
                 "device-names-2026-12-31.csv", "device-names-draft.csv"):
        (tmp_path / name).write_text("accelerator\n", encoding="utf-8")
    found = shipped.newest("device-names", tmp_path)
    assert found == tmp_path / "device-names-2027-01-15.csv" and shipped.table_date(found) == "2027-01-15"


def test_a_stem_with_no_dated_table_is_one_line(tmp_path):
    (tmp_path / "billing-terms.csv").write_text("provider\n", encoding="utf-8")
    with pytest.raises(GpucostError) as refused:
        shipped.newest("billing-terms", tmp_path)
    assert str(refused.value) == f"{tmp_path}: no billing-terms table (billing-terms-YYYY-MM-DD.csv)"
    with pytest.raises(GpucostError, match="no device-names table"):
        shipped.newest("device-names", tmp_path)


def _packaged(relative: str) -> bool:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    patterns = config["options.package_data"]["gpucost_mlflow"].split()
    return any(fnmatch.fnmatch(f"resources/{relative}", pattern) for pattern in patterns)


def test_the_wheel_declares_every_shipped_file_as_package_data():
    # the dated tables: a catalog a user writes there (`make demo`'s this-machine.csv) is theirs, not shipped
    tables = [f"{shipped.TABLES}/{path.name}" for path in (ROOT / shipped.TABLES).glob("*-????-??-??.csv")]
    assert len(tables) >= 5
    for relative in [*map(str, shipped.DEFAULTS), *tables]:
        assert _packaged(relative), relative


def test_the_user_code_the_shipped_variants_name_is_package_data_too():
    document = yaml.safe_load((ROOT / shipped.VARIANTS).read_text(encoding="utf-8"))
    workloads = [values.get("workload", "") for values in [document["defaults"], *document["variants"].values()]]
    files = [w[len("python:"):] for w in workloads if w.startswith("python:") and w.endswith(".py")]
    for name in files:
        relative = (ROOT / shipped.VARIANTS.parent / name).resolve().relative_to(ROOT)
        assert _packaged(relative.as_posix()), relative


def test_outside_the_checkout_the_commands_read_the_shipped_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shown = CliRunner().invoke(main, ["protocol", "show"])
    assert shown.exit_code == 0 and str(shipped.shipped(shipped.PROTOCOL)) in shown.output
    priced = CliRunner().invoke(main, ["packages", "--gpu", "b200", "--days", "7"])
    assert priced.exit_code == 0 and "2,071.00 USD for 2 GPU(s)" in priced.output
    assert CliRunner().invoke(main, ["variants"]).output.startswith("batch1")
