"""User code (python:PATH_OR_MODULE): child.py runs it in the pass's child, launch.py describes it for the launcher."""

from gpucost_mlflow.core.kinds.base import Kind

KIND = Kind("python", "", __name__, deterministic=False)  # declared in setup.cfg's entry points (gpucost.workloads)
