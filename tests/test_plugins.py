"""Kinds and engines from other packages (core/kinds/plugins.py): an installed package's entry point declares one,
as MLflow's plug-ins are found; GPUCOST_WORKLOADS stays an override and a malformed item is refused in one line."""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import base, engines, plugins, registry

pytestmark = pytest.mark.unit


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A distribution on sys.path declaring a kind and an engine by entry points, as `pip install` would leave it."""
    (tmp_path / "toy_plugin.py").write_text(textwrap.dedent('''
        from gpucost_mlflow.core.kinds.base import Kind
        from gpucost_mlflow.core.kinds.engines import Engine

        KIND = Kind("toyep", "labels", "toy_plugin")
        ENGINE = Engine("toyengine", ("toy_plugin",), ("toy-plugin",), "pip install toy-plugin", ("toyep",),
                        precisions=("fp32",))
        NOT_A_KIND = "toyep"
    '''))
    info = tmp_path / "toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n")
    points = info / "entry_points.txt"
    points.write_text("[gpucost.workloads]\ntoyep = toy_plugin:KIND\n\n[gpucost.engines]\ntoyengine = toy_plugin:ENGINE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.declared.cache_clear()
    yield points
    plugins.declared.cache_clear()


def test_an_installed_packages_entry_points_add_its_kind_and_its_engine(installed):
    assert registry.kind("toyep").package == "toy_plugin" and "toyep" in registry.built_in()
    assert engines.engine("toyengine").kinds == ("toyep",) and engines.names()[:1] == ("torch",)


def test_an_entry_point_that_is_not_a_kind_is_refused_in_one_line(installed):
    installed.write_text("[gpucost.workloads]\ntoyep = toy_plugin:NOT_A_KIND\n")
    with pytest.raises(GpucostError, match=r"^entry point toyep = toy_plugin:NOT_A_KIND \(gpucost.workloads\) is a str, "
                                           r"not a Kind$"):
        registry.kinds()


@pytest.mark.parametrize("value", ["toy:labels", "toy:labels:", "toy::toy_kind", "toy:labels:toy_kind:extra"])
def test_a_malformed_gpucost_workloads_item_is_refused_in_one_line_never_dropped(monkeypatch, value):
    monkeypatch.setenv(plugins.ENVIRONMENT, f"ok:labels:ok_kind, {value}")
    with pytest.raises(GpucostError) as refused:
        registry.kinds()
    assert str(refused.value) == (f"GPUCOST_WORKLOADS: {value!r} is not name:output:package (comma-separated for "
                                  "several)")
    result = CliRunner().invoke(main, ["demo", "variants", "--list"])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "GPUCOST_WORKLOADS" in result.output, result.output


def test_gpucost_workloads_still_declares_a_kind_beside_the_shipped_ones(monkeypatch):
    monkeypatch.setenv(plugins.ENVIRONMENT, "toy:labels:toy_kind")
    assert registry.kind("toy").output == "labels" and registry.kinds()[: len(registry.shipped())] == registry.shipped()


def test_run_from_a_checkout_without_installing_reads_its_own_kinds_from_setup_cfg(monkeypatch):
    """benchmarks/device_check.sh runs the package by PYTHONPATH on an offline GPU machine: no metadata, no entry
    points; the checkout's setup.cfg declares the same kinds, read the same way."""
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [])
    plugins.declared.cache_clear()
    try:
        assert [kind.name for kind in registry.shipped()] == ["classification", "embeddings", "generation", "python"]
        assert registry.served_by("onnxruntime") == ("classification", "embeddings")
    finally:
        plugins.declared.cache_clear()


def test_outside_a_checkout_and_uninstalled_the_kinds_are_missing_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [])
    monkeypatch.setattr(plugins, "SETUP_CFG", tmp_path / "setup.cfg")
    plugins.declared.cache_clear()
    try:
        with pytest.raises(GpucostError, match="^no built-in workload kind is declared: gpucost-mlflow's entry points"):
            registry.shipped()
    finally:
        plugins.declared.cache_clear()


def test_an_output_module_missing_a_member_of_the_interface_is_refused_in_one_line(monkeypatch, tmp_path):
    """A kind bringing a new output brings its `output.py`; one lacking a member of base.Output is refused when the
    registry loads it, naming the module and every missing member."""
    package = tmp_path / "half_output_kind"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "output.py").write_text('NAME = "halves"\nFILE = "halves.jsonl.gz"\nSECTION = ""\n\n\n'
                                       'def bar(acceptance):\n    return ""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(plugins.ENVIRONMENT, "halfkind:halves:half_output_kind")
    with pytest.raises(GpucostError) as refused:
        registry.output("halves")
    missing = [name for name in base.output_members(section=False) if name not in ("NAME", "FILE", "SECTION", "bar")]
    assert str(refused.value) == (f"output module half_output_kind.output lacks {', '.join(missing)} "
                                  "(gpucost_mlflow.core.kinds.base.Output)")
    assert "\n" not in str(refused.value) and "FILES" in missing and "merge" in missing and "task" not in missing
    assert registry.output("labels").NAME == "labels"  # every shipped output offers the whole interface
