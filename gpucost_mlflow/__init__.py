"""gpucost-mlflow: which GPU configuration costs the least for the same ML result."""

__version__ = "0.1.0"
