"""Test-only, on PYTHONPATH of a stand-in fleet job's processes (tests/fakes/sky/_controller.py): while
GPUCOST_TEST_DEVICE_NAME is set, the CPU the pass runs on is named as that job's GPU type, so two jobs on this one
machine record two devices. Installed as an import hook on gpucost_mlflow.execution.devices."""

from __future__ import annotations

import importlib.abc
import os
import sys

TARGET = "gpucost_mlflow.execution.devices"


class _Rename(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            real = module.cpu_name
            module.cpu_name = lambda: os.environ.get("GPUCOST_TEST_DEVICE_NAME") or real()

        loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Rename())
