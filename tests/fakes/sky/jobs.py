"""sky.jobs: managed jobs launched, listed and cancelled; each runs under its own controller process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import sky


def _jobs() -> Path:
    path = sky.state_dir() / "jobs"
    path.mkdir(exist_ok=True)
    return path


def launch(task, name=None, num_jobs=None, **_):
    """One managed job, or `num_jobs` of them, each told its rank (SKYPILOT_JOB_RANK) and the count (SKYPILOT_NUM_JOBS)
    as SkyPilot 0.14.1 tells them."""
    count = num_jobs or 1
    job_ids = [_launch_one(task, name, rank, count) for rank in range(count)]
    return job_ids, None


def _launch_one(task, name, rank: int, count: int) -> int:
    job_id = len(list(_jobs().iterdir())) + 1
    folder = _jobs() / str(job_id)
    folder.mkdir()
    (folder / "task.json").write_text(json.dumps({"config": task.config, "secrets": task.secrets, "rank": rank,
                                                  "num_jobs": count}))
    (folder / "state.json").write_text(json.dumps({"job_id": job_id, "job_name": name, "status": "PENDING",
                                                   "recovery_count": 0}))
    sky.record_call("jobs.launch", job_name=name, job_id=job_id, secret_names=sorted(task.secrets), rank=rank)
    if os.environ.get("FAKE_SKY_HOLD"):  # recorded only: the test looks at the launch, not at the job
        return job_id
    controller = Path(__file__).with_name("_controller.py")
    with open(folder / "controller.log", "ab") as log:
        subprocess.Popen([sys.executable, str(controller), str(folder)], stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True, env=dict(os.environ))
    return job_id


def queue_v2(refresh, skip_finished=False, all_users=False, job_ids=None, **_):
    records = []
    for folder in sorted(_jobs().iterdir(), key=lambda p: int(p.name)):
        record = json.loads((folder / "state.json").read_text())
        if job_ids is None or record["job_id"] in job_ids:
            records.append(_shown(record))
    sky.record_call("jobs.queue_v2", job_ids=job_ids)
    return records, len(records), {}, len(records)


def _shown(record: dict) -> dict:
    """The record as SkyPilot's queue shows it: `job_duration` every attempt's run time together (the lost ones'
    alone while RECOVERING), from the last attempt's start to its end, or to now while it runs."""
    started = record.get("last_recovered_at")
    if started is not None and record["status"] != "RECOVERING":
        record["job_duration"] = (record.get("end_at") or time.time()) - (started - record["job_duration"])
    return record


def cancel(name=None, job_ids=None, **_):
    for job_id in job_ids or []:
        (_jobs() / str(job_id) / "cancel").touch()
    sky.record_call("jobs.cancel", job_ids=list(job_ids or []))


def preempt(job_id: int) -> None:
    """Test hook: the job's machine is lost now; the controller recovers it."""
    (_jobs() / str(job_id) / "preempt").touch()
