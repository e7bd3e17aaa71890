"""The built-in classifier: child.py runs it in the pass's child, launch.py describes it for the launcher."""

from gpucost_mlflow.core.kinds.base import Kind

# declared in setup.cfg's entry points (gpucost.workloads)
KIND = Kind("classification", "labels", __name__, encoder_memory=True)
