"""The fleet's jobs: one per GPU type, each a managed SkyPilot job running one campaign."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError

# The environment variable SkyPilot sets in a managed job's tasks: the job's id, the same across its recoveries.
MANAGED_JOB_ID = "SKYPILOT_MANAGED_JOB_ID"


@dataclass(frozen=True)
class Job:
    """One GPU type's campaign: `count` devices of it on one machine (more than one for a lanes variant)."""

    gpu: str
    count: int = 1

    @property
    def accelerators(self) -> str:
        """SkyPilot's `resources.accelerators` for this job."""
        return f"{self.gpu}:{self.count}"

    def name(self, fleet_id: str) -> str:
        """The managed job's name: the fleet and the GPU type, in the characters SkyPilot accepts in a name."""
        return f"gpucost-{fleet_id}-{re.sub(r'[^a-z0-9-]+', '-', self.gpu.lower()).strip('-')}"


def new_fleet_id() -> str:
    """A fresh fleet id, as a campaign id is made ('f' and ten hex digits)."""
    return "f" + uuid.uuid4().hex[:10]


def parse_gpus(text: str, count: int = 1) -> list[Job]:
    """`--gpus L4,A10G,A100` as jobs, in the order given; empty or repeated names are refused in one line."""
    names = [name.strip() for name in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise GpucostError(f"--gpus '{text}': name GPU types separated by commas, e.g. L4,A10G,A100")
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise GpucostError(f"--gpus names {name} twice: one campaign per GPU type")
        seen.add(name.lower())
    return [Job(name, count) for name in names]
