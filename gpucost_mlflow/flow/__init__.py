"""The pass flow: the one layer that imports both execution (torch, the child process) and tracking (mlflow)."""
