"""Built-in greedy generation: child.py runs it in the pass's child, launch.py describes it for the launcher."""

from gpucost_mlflow.core.kinds.base import Kind

# declared in setup.cfg's entry points (gpucost.workloads)
KIND = Kind("generation", "generations", __name__, endpoint_apis=("chat", "completions"))
