"""Workload kinds, each a folder behind one interface (core/kinds/base.py), found by core/kinds/registry.py through
its entry point and chosen from the variant's `workload:`.

A kind's folder holds `__init__.py` (its `KIND`), `child.py` (loaded in the pass's child process: torch, never
mlflow), `launch.py` (the launcher's side: the default model and what the manifest records of the workload) and
`with_<engine>.py` per other engine it runs on. docs/architecture.md, "Adding a workload", lists what a new kind
takes: its folder and one entry-point line in setup.cfg.
"""
