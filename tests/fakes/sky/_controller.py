"""One managed job of the stand-in: the task's file mounts copied into the job's own HOME, `~/gpucost-venv` pointing at
the venv running the tests (the task's `setup` installs nothing here), then its `run` script under bash with the
task's envs and secrets and SkyPilot's job id. A `preempt` file kills the run's process group at once (no signal
handler runs, as on a lost machine) and runs it again, as does an exit code the task's
`job_recovery.recover_on_exit_codes` names; a `cancel` file ends it CANCELLED. A bucket mounted (`{source, mode:
MOUNT}`) is the local folder FAKE_SKY_BUCKETS maps its URI to; FAKE_SKY_FIRST_ATTEMPT_ENV adds variables to one job's
first attempt only. Its state keeps SkyPilot's
columns: `job_duration` the run time of the attempts already lost, `last_recovered_at` the last attempt's start,
`end_at`, `recovery_count` counted once the relaunch is up (sky/jobs.py's queue derives the duration SkyPilot shows).
An attempt's clock starts where SkyPilot's does, when the job is on its machine: its setup counts in it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

folder = Path(sys.argv[1])
job = json.loads((folder / "task.json").read_text())
config = job["config"]
home = folder / "home"
home.mkdir()
buckets = json.loads(os.environ.get("FAKE_SKY_BUCKETS", "{}"))  # a bucket's URI -> the local folder standing for it
for remote, local in config.get("file_mounts", {}).items():
    target = home / remote.removeprefix("~/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(local, dict):  # a bucket in MOUNT mode: every job sees (and writes) the same folder
        target.symlink_to(buckets[local["source"]])
        continue
    (shutil.copytree if Path(local).is_dir() else shutil.copy2)(local, target)
(home / "gpucost-venv").symlink_to(sys.prefix)
state = json.loads((folder / "state.json").read_text())
gpu = config["resources"]["accelerators"].split(":")[0]
names = json.loads(os.environ.get("FAKE_SKY_DEVICE_NAMES", "{}"))
env = dict(os.environ, **config.get("envs", {}), **job["secrets"], HOME=str(home),
           SKYPILOT_MANAGED_JOB_ID=str(state["job_id"]), GPUCOST_TEST_DEVICE_NAME=names.get(gpu, gpu),
           SKYPILOT_JOB_RANK=str(job.get("rank", 0)), SKYPILOT_NUM_JOBS=str(job.get("num_jobs", 1)))
env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[1] / "device_name"), env.get("PYTHONPATH", "")])
env.pop("FAKE_SKY_STATE", None)


def save(**fields) -> None:
    state.update(fields)
    staged = folder / "state.json.tmp"
    staged.write_text(json.dumps(state))
    os.replace(staged, folder / "state.json")


started = time.time()
save(status="RUNNING", cloud="AWS", region="us-east-1", submitted_at=started, start_at=started,
     last_recovered_at=started, job_duration=0.0,
     cluster_resources=f"1x(gpus={config['resources']['accelerators']}, "
                       f"{'g6.xlarge' if gpu == 'L4' else 'g5.xlarge'}, cpus=4, mem=16)")
first = json.loads(os.environ.get("FAKE_SKY_FIRST_ATTEMPT_ENV", "{}")).get(str(state["job_id"]), {})
recover_on = config["resources"].get("job_recovery", {}).get("recover_on_exit_codes", [])
while True:
    with open(folder / f"run-{state['recovery_count']}.log", "ab") as log:
        run = subprocess.Popen(["bash", "-c", config["run"]], cwd=home, env={**env, **first}, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    outcome = None
    while run.poll() is None:
        if (folder / "preempt").exists():
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            (folder / "preempt").unlink()
            save(job_duration=state["job_duration"] + time.time() - state["last_recovered_at"], status="RECOVERING")
            outcome = "recover"
            break
        if (folder / "cancel").exists():
            os.killpg(run.pid, signal.SIGTERM)
            run.wait()
            outcome = "CANCELLED"
            break
        time.sleep(0.2)
    first = {}  # the first attempt's own environment (a fault a test injects there only)
    if outcome is None and run.returncode in recover_on:  # SkyPilot's job_recovery.recover_on_exit_codes: restarted
        save(job_duration=state["job_duration"] + time.time() - state["last_recovered_at"], status="RECOVERING")
        outcome = "recover"
    if outcome == "recover":
        save(status="RUNNING", recovery_count=state["recovery_count"] + 1, last_recovered_at=time.time())
        continue
    save(status=outcome or ("SUCCEEDED" if run.returncode == 0 else "FAILED"), end_at=time.time())
    break
