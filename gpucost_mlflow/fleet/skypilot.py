"""SkyPilot's SDK for the fleet: the only fleet module that imports `sky`. Tasks are built from the YAML config
core/fleet/task.py writes, launched as managed jobs (`sky.jobs.launch`), read back (`sky.jobs.queue_v2`) and
cancelled (`sky.jobs.cancel`); SkyPilot's client calls return request ids that `sky.get` waits on."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.money.market import Offer
from gpucost_mlflow.market import require
from gpucost_mlflow.market import skypilot as catalog


def _sky():
    return require("sky", "fleet")


def offers(clouds: list[str], gpus: list[str]) -> list[Offer]:
    """The offers of these GPU types in SkyPilot's catalog (the clouds named, else every cloud cached here)."""
    _sky()
    return catalog.read(clouds or None, gpus, None).offers


def task(config: dict, secrets: dict[str, str] | None = None):
    """The sky.Task SkyPilot builds from the config (a one-line error if it refuses it), given the secrets' values."""
    sky = _sky()
    try:
        built = sky.Task.from_yaml_config(copy.deepcopy(config))
    except Exception as exc:  # noqa: BLE001 - SkyPilot's validation errors are of several types
        raise GpucostError(f"SkyPilot refuses the task {config.get('name', '')}: {one_line(exc, named=True)}") from None
    if secrets:
        built.update_secrets(secrets)
    return built


def launch(config: dict, secrets: dict[str, str]) -> int:
    """Launch the task as a managed job; its job id."""
    return launch_ranked(config, secrets, 1)[0]


def launch_ranked(config: dict, secrets: dict[str, str], jobs: int) -> list[int]:
    """Launch the task as `jobs` managed jobs (SkyPilot's `num_jobs`: each told its rank, SKYPILOT_JOB_RANK, and the
    count, SKYPILOT_NUM_JOBS); their job ids, by rank."""
    sky = _sky()
    extra = {"num_jobs": jobs} if jobs > 1 else {}
    job_ids, _ = sky.get(sky.jobs.launch(task(config, secrets), name=config["name"], **extra))
    if not job_ids or len(job_ids) != jobs:
        raise GpucostError(f"SkyPilot returned {len(job_ids or [])} job id(s) for {config['name']}, not {jobs}")
    return [int(job_id) for job_id in job_ids]


@dataclass(frozen=True)
class JobState:
    """What SkyPilot says of one managed job: `duration_s` is every attempt's run time together (setup included),
    `last_recovered_at` and `end_at` the last attempt's start and end (epoch seconds; None when not known)."""

    job_id: int
    status: str
    cloud: str
    region: str
    resources: str
    duration_s: float | None
    recoveries: int
    last_recovered_at: float | None = None
    end_at: float | None = None
    start_at: float | None = None  # the first attempt's start (epoch seconds)


def _field(record, name: str):
    return record.get(name) if isinstance(record, dict) else getattr(record, name, None)


def jobs(job_ids: list[int]) -> dict[int, JobState]:
    """SkyPilot's state of these managed jobs, by id (a job SkyPilot no longer lists is absent)."""
    sky = _sky()
    answer = sky.get(sky.jobs.queue_v2(refresh=False, job_ids=list(job_ids)))
    records = answer[0] if isinstance(answer, tuple) else answer
    found = {}
    for record in records:
        status = _field(record, "status")
        job_id = int(_field(record, "job_id"))
        found[job_id] = JobState(
            job_id, getattr(status, "value", str(status or "")), str(_field(record, "cloud") or ""),
            str(_field(record, "region") or ""),
            str(_field(record, "cluster_resources") or _field(record, "resources") or ""),
            _field(record, "job_duration"), int(_field(record, "recovery_count") or 0),
            _field(record, "last_recovered_at"), _field(record, "end_at"), _field(record, "start_at"))
    return found


def cancel(job_ids: list[int]) -> None:
    sky = _sky()
    sky.get(sky.jobs.cancel(job_ids=list(job_ids)))
