"""The files gpucost ships (price list, ROCm matrices, default protocol and variants) are found outside the checkout."""

from __future__ import annotations

import configparser
import fnmatch
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.inputs import shipped
from tests.helpers import ROOT

pytestmark = pytest.mark.unit


def test_each_shipped_default_is_the_repository_file_itself():
    for relative in (*shipped.DEFAULTS, shipped.ROCM_MATRICES):
        assert shipped.shipped(relative).resolve() == (ROOT / relative).resolve()


def test_a_default_missing_under_root_is_the_shipped_copy_a_present_one_wins(tmp_path):
    assert shipped.default_file(shipped.PROTOCOL, tmp_path) == shipped.shipped(shipped.PROTOCOL)
    assert shipped.default_file(shipped.PROTOCOL, ROOT) == ROOT / shipped.PROTOCOL
    assert shipped.default_file(Path("projects/mine.yaml"), tmp_path) == tmp_path / "projects/mine.yaml"


def _packaged(relative: str) -> bool:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    patterns = config["options.package_data"]["gpucost_mlflow"].split()
    return any(fnmatch.fnmatch(f"resources/{relative}", pattern) for pattern in patterns)


def test_the_wheel_declares_every_shipped_file_as_package_data():
    matrices = [f"{shipped.ROCM_MATRICES}/{path.name}" for path in (ROOT / shipped.ROCM_MATRICES).glob("rocm-*.csv")]
    for relative in [*map(str, shipped.DEFAULTS), *matrices]:
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
