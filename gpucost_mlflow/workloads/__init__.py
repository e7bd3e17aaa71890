"""Workload kinds, each a folder behind one interface (base.py), chosen by the registry from the variant's `workload:`.

A kind's folder holds `child.py` (loaded in the pass's child process: torch, never mlflow) and `launch.py` (the
launcher's side: the default model and what the manifest records of the workload). docs/architecture.md, "Adding a
workload", lists what a new kind takes: its folder and one registry line.
"""
