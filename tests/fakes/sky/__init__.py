"""A stand-in for SkyPilot's client SDK in the fleet tests, as tests/fakes/vllm stands in for vLLM: the calls gpucost
makes (`Task.from_yaml_config`, `jobs.launch`, `jobs.queue_v2`, `jobs.cancel`, `get`, `catalog.list_accelerators`),
recorded, with managed jobs run here. Each launched job gets a controller process (sky/_controller.py) that copies the
task's file mounts into the job's own HOME and runs its `run` script locally, against whatever tracking server the
test started; a test preempts a job (`preempt`), and the controller kills the run's whole process group at once, as a
lost machine would, then runs it again as SkyPilot's recovery does. State lives under $FAKE_SKY_STATE."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sky import catalog, jobs  # noqa: F401 - the SDK's modules
from sky.task import Task  # noqa: F401

__version__ = "0.0+gpucost-stand-in"


def state_dir() -> Path:
    path = Path(os.environ["FAKE_SKY_STATE"])
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_call(name: str, **fields) -> None:
    """One line per SDK call, for the tests to read."""
    with open(state_dir() / "calls.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps({"call": name, **fields}) + "\n")


def get(request):
    """The stand-in answers every request at once: its `request id` is already the answer."""
    return request
