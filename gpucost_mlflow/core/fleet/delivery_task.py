"""The SkyPilot task of a delivery fleet, as the YAML config SkyPilot reads: one task launched as one managed job per
lot (`num_jobs`), each a worker that installs this gpucost, finds its share of the corpora by its SkyPilot job rank
and delivers it with the decided configuration (`gpucost fleet worker`), under the plan's window.

The corpora travel as a file mount: the local folder, or `--bucket URI` (a bucket SkyPilot mounts, MOUNT mode, where
each worker also writes its outputs, under `outputs/<decision run>/`); never through the tracking store. A worker whose
corpus failed its first try exits RETRY_EXIT, and SkyPilot starts it again (`job_recovery.recover_on_exit_codes`):
the one retry; a corpus failing twice ends the worker FAILED, which SkyPilot does not restart.
"""

from __future__ import annotations

import shlex
from decimal import Decimal

from gpucost_mlflow.core.fleet.delivery import JOB_RANK, NUM_JOBS, RETRY_EXIT, Decision
from gpucost_mlflow.core.fleet.jobs import Job
from gpucost_mlflow.core.fleet.task import HOME, KILL_AFTER_S, VENV, Inputs, Machine, _seconds, setup_script


def name(fleet_id: str) -> str:
    """The managed jobs' name: the fleet's, one per worker."""
    return f"gpucost-{fleet_id}-deliver"


OUTPUTS = "outputs"  # the bucket's folder of the deliverables' outputs, one subfolder per decision run


def worker_command(fleet_id: str, decision: Decision, inputs: Inputs, only: tuple[str, ...] = (),
                   bucket: str = "") -> str:
    """The worker's command: the decided configuration over its share, named by its rank among the fleet's jobs; its
    outputs written to the bucket when there is one."""
    args = ["--fleet", fleet_id, "--experiment", decision.experiment, "--variant", decision.variant,
            "--decision", decision.decision_id, "--gpu", decision.accelerator]
    if only:
        args += ["--only", ",".join(only)]
    paths = " ".join(f'--{option} "{inputs.remote(field)}"' for option, field in
                     (("corpora", "corpus"), ("protocol", "protocol"), ("variants-file", "variants"),
                      ("model", "model")))
    if bucket:
        paths += f' --outputs "{inputs.remote("corpus")}/{OUTPUTS}/{decision.decision_id}"'
    return " ".join(["gpucost fleet worker", *(shlex.quote(part) for part in args),
                     f'--rank "${JOB_RANK}" --workers "${NUM_JOBS}"', paths])


def run_script(fleet_id: str, decision: Decision, inputs: Inputs, max_hours: Decimal, only: tuple[str, ...] = (),
               bucket: str = "") -> str:
    """The worker under the plan's window (a Ctrl-C at the limit: the corpus in progress is recorded interrupted)."""
    return "\n".join([
        "set -e",
        f'export PATH="{VENV}/bin:$PATH" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1',
        f'cd "{HOME}"',
        (f"timeout --signal=INT --kill-after={KILL_AFTER_S} {_seconds(max_hours)} "
         f"{worker_command(fleet_id, decision, inputs, only, bucket)}"),
        "",
    ])


def task_config(fleet_id: str, decision: Decision, *, machine: Machine, inputs: Inputs, secret_names: list[str],
                bucket: str = "", only: tuple[str, ...] = ()) -> dict:
    """The delivery's SkyPilot task: the decided offer's accelerators, cloud and region, the inputs and corpora
    mounted, setup, the worker, and the secrets given at launch."""
    resources: dict = {"accelerators": decision.accelerators, "use_spot": machine.spot,
                       "job_recovery": {"recover_on_exit_codes": [RETRY_EXIT]}}
    if decision.provider:
        resources["infra"] = f"{decision.provider}/{decision.region}" if decision.region else decision.provider
    mounts = inputs.mounts()
    if bucket:
        mounts[inputs.remote("corpus").replace("$HOME", "~")] = {"source": bucket, "mode": "MOUNT"}
    config = {
        "name": name(fleet_id),
        "resources": resources,
        "file_mounts": mounts,
        "setup": setup_script(Job(decision.accelerator, decision.gpus_per_lot), inputs, machine),
        "run": run_script(fleet_id, decision, inputs, machine.max_hours, only, bucket),
    }
    if secret_names:
        config["secrets"] = {secret: None for secret in secret_names}
    return config
