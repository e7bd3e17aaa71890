"""Python 3.10 to 3.13: every module imports on the Python running the tests, and on the oldest one where it is here.

`make test` runs vermin for the oldest version setup.cfg promises; `.ci/run` runs `make unit` on pyenv's 3.10 and
3.13 where they are present (`make unit-py`), where the first test below imports every module under that Python.
"""

from __future__ import annotations

import configparser
import importlib
import importlib.util
import pkgutil
import subprocess
import sys

import pytest

import gpucost_mlflow
from tests.helpers import ROOT

# Packages a module may import at its top that a venv may lack: torch (no CPU wheel for every Python on the
# project's machines, so `make unit-py` leaves it out) and the optional engines and board readers.
OPTIONAL = {"torch", "onnxruntime", "onnx", "ctranslate2", "vllm", "pynvml", "amdsmi", "gguf", "accelerate"}


def oldest_python() -> tuple[int, int]:
    """The oldest Python setup.cfg promises (python_requires = >=3.X)."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    major, minor = parser["options"]["python_requires"].removeprefix(">=").split(".")[:2]
    return int(major), int(minor)


def import_every_module() -> tuple[list[str], dict[str, str]]:
    """Import every module of the package; returns those imported and, by module, the optional package it lacks.
    Any other failure raises."""
    imported, absent = [], {}
    for info in pkgutil.walk_packages(gpucost_mlflow.__path__, "gpucost_mlflow."):
        if info.name.endswith(".__main__"):  # `python -m gpucost_mlflow`: importing it runs the command line
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in OPTIONAL:
                raise
            absent[info.name] = exc.name
        else:
            imported.append(info.name)
    return imported, absent


@pytest.mark.unit
def test_every_module_imports_under_this_python():
    assert sys.version_info[:2] >= oldest_python()
    imported, absent = import_every_module()
    assert "gpucost_mlflow.core.money.window" in imported and "gpucost_mlflow.tracking.descriptions" in imported
    assert "gpucost_mlflow.cli" in imported and "gpucost_mlflow.report.build" in imported
    if importlib.util.find_spec("torch") is not None:
        assert not any(name == "torch" for name in absent.values()), absent


def test_the_oldest_supported_python_imports_every_module():
    """Under the oldest Python's own venv (`make unit-py PY=...`), where one is here."""
    version = "{}.{}".format(*oldest_python())
    python = ROOT / f".venv-py{version}" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no Python {version} venv at {python.parent.parent.name} (made by `make unit-py PY=python{version}`, "
                    f"which .ci/run runs where pyenv has {version})")
    code = ("from tests.test_python_versions import import_every_module as f; i, a = f(); "
            "print(len(i), 'imported;', len(a), 'need an optional package:', sorted(set(a.values())))")
    done = subprocess.run([str(python), "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert " imported;" in done.stdout
