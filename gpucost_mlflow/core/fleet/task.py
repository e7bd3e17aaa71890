"""The SkyPilot task of one fleet job, as the YAML config SkyPilot reads (`sky.Task.from_yaml_config`).

`setup` installs exactly the gpucost that launched it (its wheel, mounted) and the machine's torch build; `file_mounts`
carry the corpus, model, protocol and variants file; `run` measures the device's peak (`gpucost doctor --peak`) and runs
the campaign (`gpucost fleet job`, which resumes it after a recovery) under `--max-hours`. The credentials are named in
`secrets` without their values: SkyPilot receives the values at launch and never from this file.
"""

from __future__ import annotations

import itertools
import posixpath
import re
import shlex
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path, PurePosixPath

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet.jobs import Job
from gpucost_mlflow.core.inputs.workloads import PYTHON

HOME = "$HOME/gpucost"  # where the inputs are mounted on the machine (SkyPilot's `~/gpucost`)
VENV = "$HOME/gpucost-venv"
# torch for an AMD Instinct GPU comes from PyTorch's ROCm index; PyPI's Linux wheel is the CUDA build.
ROCM_INDEX = "https://download.pytorch.org/whl/rocm6.4"
KILL_AFTER_S = 120
# after the limit's Ctrl-C, what the campaign gets to record the interrupted pass
SAFE_NAME = re.compile(r"[A-Za-z0-9._+-]+")


@dataclass(frozen=True)
class Inputs:
    """The local files a job needs, mounted on its machine."""

    wheel: Path
    corpus: Path
    model: Path
    protocol: Path
    variants: Path
    code: tuple[tuple[str, Path], ...] = ()  # user code the variants file names: (its relative path there, the file)

    def mounts(self) -> dict[str, str]:
        """SkyPilot's file_mounts: remote path -> local path (user code where the variants file's relative paths
        find it)."""
        mounts = {remote.replace("$HOME", "~"): str(local) for remote, local in self._remote().items()}
        folder = posixpath.dirname(self.remote("variants")).replace("$HOME", "~")
        for relative, local in self.code:
            mounts[posixpath.normpath(posixpath.join(folder, relative))] = str(local)
        return mounts

    def check(self) -> None:
        """Refuse a file name the job's shell line could not carry as it is."""
        for name in ("wheel", "corpus", "model", "protocol", "variants"):
            path = getattr(self, name)
            if not SAFE_NAME.fullmatch(path.name):
                raise GpucostError(f"{path}: a fleet mounts its {name} under its own name, which may hold only "
                                   "letters, digits, '.', '_' and '-'; rename or copy it")

    def remote(self, name: str) -> str:
        return self._remote_paths()[name]

    def _remote_paths(self) -> dict[str, str]:
        model = f"{HOME}/model/{self.model.name}" if self.model.is_file() else f"{HOME}/model"
        return {"wheel": f"{HOME}/wheel/{self.wheel.name}", "corpus": f"{HOME}/corpus/{self.corpus.name}",
                "model": model, "protocol": f"{HOME}/protocol/{self.protocol.name}",
                "variants": f"{HOME}/variants/{'up/' * self._depth()}{self.variants.name}"}

    def _depth(self) -> int:
        """How many folders up the variants file's code paths climb: the variants file is mounted that deep, so
        they land inside the job's folder."""
        return max((len(list(itertools.takewhile(lambda part: part == "..", PurePosixPath(r).parts)))
                    for r, _ in self.code), default=0)

    def _remote(self) -> dict[str, Path]:
        paths = self._remote_paths()
        return {paths[name]: getattr(self, name) for name in paths}


@dataclass(frozen=True)
class Campaign:
    """What each job's campaign runs: the experiment, the variants named or a declared series, the passes; in a
    second stage, the stage's plan its passes carry."""

    experiment: str
    variants: str = ""
    series: str = ""
    passes: int | None = None
    settle_plan: str = ""  # a second stage's plan over every device (core/campaign/settle.StagePlan.record)

    def args(self) -> list[str]:
        chosen = ["--series", self.series] if self.series else ["--variants", self.variants]
        stage = ["--settle-plan", self.settle_plan] if self.settle_plan else []
        return ["--experiment", self.experiment, *chosen, *(["--passes", str(self.passes)] if self.passes else []),
                *stage]


@dataclass(frozen=True)
class Machine:
    """Each job's machine: the clouds it may run on, spot or not, its torch build, and the setup and campaign limits."""

    clouds: tuple[str, ...]
    spot: bool
    torch_version: str
    setup_hours: Decimal
    max_hours: Decimal
    servers: tuple[str, ...] = ()  # the package extras the variants' endpoint servers need (server_extras)


# The first words of an endpoint's `serve` command, and the extra of gpucost-mlflow that installs that server.
SERVERS = (("vllm", "vllm"), ("python -m vllm", "vllm"), ("python3 -m vllm", "vllm"), ("python -m sglang", "sglang"),
           ("python3 -m sglang", "sglang"), ("sglang", "sglang"), ("transformers serve", "serving"))


def server_extras(variants: dict) -> tuple[str, ...]:
    """The extras ([vllm], [sglang], [serving]) that install the servers the variants' `endpoint.serve` start; a
    command none of them starts is the user's own, installed by them (it is named in the setup's log when missing)."""
    found = []
    for variant in variants.values():
        served = variant.settings.endpoint.serve.strip() if variant.settings.endpoint else ""
        found += [extra for start, extra in SERVERS if served == start or served.startswith(f"{start} ")]
    return tuple(sorted(set(found)))


def api_key_variables(variants: dict) -> tuple[str, ...]:
    """The environment variables the variants' endpoints read their API keys from: each travels as a SkyPilot secret,
    never in a file."""
    return tuple(sorted({v.settings.endpoint.api_key_env for v in variants.values()
                         if v.settings.endpoint and v.settings.endpoint.api_key_env}))


def endpoint_keys(variants: dict, environ: dict[str, str]) -> dict[str, str]:
    """Each endpoint's API key from this environment, by its variable's name, for SkyPilot's secrets; a variable that is
    not set is refused in one line before anything is launched."""
    missing = [name for name in api_key_variables(variants) if not environ.get(name)]
    if missing:
        raise GpucostError(f"the variants' endpoints read their API keys from {', '.join(missing)}, not set here: set "
                           "them before launching (each travels as a SkyPilot secret); nothing launched")
    return {name: environ[name] for name in api_key_variables(variants)}


def user_code(variants: dict, variants_path: Path) -> tuple[tuple[str, Path], ...]:
    """The .py files the variants' `python:` workloads name, relative to the variants file: each job mounts them so
    the file reads the same there. A module name (found on this machine's path) or an absolute path cannot travel:
    refused in one line."""
    found = {}
    for name, variant in variants.items():
        if not variant.settings.workload.startswith(PYTHON):
            continue
        target = variant.settings.workload[len(PYTHON):].strip()
        if not (target.endswith(".py") or "/" in target or "\\" in target):
            raise GpucostError(f"variant '{name}' has workload {variant.settings.workload}: a module importable here "
                               "is not on the fleet's machines; name its .py file relative to the variants file")
        if Path(target).is_absolute():
            raise GpucostError(f"variant '{name}' has workload {variant.settings.workload}: an absolute path does not "
                               "exist on the fleet's machines; write it relative to the variants file")
        found[PurePosixPath(Path(target).as_posix()).as_posix()] = (variants_path.parent / target).resolve()
    return tuple(sorted(found.items()))


def is_rocm(gpu: str) -> bool:
    """AMD Instinct accelerators (MI100, MI210, MI250X, MI300X, ...) run ROCm."""
    return gpu.upper().startswith("MI") and gpu[2:3].isdigit()


def _seconds(hours: Decimal) -> int:
    return max(1, int((hours * 3600).to_integral_value()))


def setup_script(job: Job, inputs: Inputs, machine: Machine) -> str:
    """A fresh venv with the machine's torch and this gpucost's wheel (with NVML or amdsmi, PostgreSQL's driver for a
    team store, and the endpoint servers the variants start), inside the setup limit."""
    torch_version, setup_hours = machine.torch_version, machine.setup_hours
    index = f" --index-url {ROCM_INDEX}" if is_rocm(job.gpu) else ""
    extras = ",".join(["rocm" if is_rocm(job.gpu) else "gpu", "team", *machine.servers])
    wheel = inputs.remote("wheel")
    steps = "\n".join([
        f'python3 -m venv "{VENV}"',
        f'"{VENV}/bin/pip" install -q torch=={torch_version}{index}',
        f'"{VENV}/bin/pip" install -q "{wheel}[{extras}]"',
    ])
    return f"set -e\ntimeout {_seconds(setup_hours)} bash -ec {shlex.quote(steps)}\n"


def run_script(fleet_id: str, job: Job, inputs: Inputs, campaign: Campaign, max_hours: Decimal) -> str:
    """The peak of the device, then the campaign under the --max-hours limit (a Ctrl-C at the limit: the pass in
    progress is recorded interrupted, as for a user's Ctrl-C)."""
    command = " ".join(["gpucost fleet job", *(shlex.quote(part) for part in
                                                ["--fleet", fleet_id, "--gpu", job.gpu, *campaign.args()])])
    paths = " ".join(f'--{option} "{inputs.remote(name)}"' for option, name in
                     (("protocol", "protocol"), ("variants-file", "variants"), ("corpus", "corpus"),
                      ("model", "model")))
    return "\n".join([
        "set -e",
        f'export PATH="{VENV}/bin:$PATH" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1',
        f'cd "{HOME}"',
        "gpucost doctor --peak --if-missing",  # a fresh machine measures; a relaunch on the same one reuses it
        f"timeout --signal=INT --kill-after={KILL_AFTER_S} {_seconds(max_hours)} {command} {paths}",
        "",
    ])


def task_config(fleet_id: str, job: Job, *, machine: Machine, inputs: Inputs, campaign: Campaign,
                secret_names: list[str]) -> dict:
    """The job's SkyPilot task: accelerators, infra, mounts, setup, run, and the secrets it is given at launch."""
    resources: dict = {"accelerators": job.accelerators, "use_spot": machine.spot}
    clouds = machine.clouds
    if len(clouds) == 1:
        resources["infra"] = clouds[0]
    elif clouds:
        resources["any_of"] = [{"infra": cloud} for cloud in clouds]
    config = {
        "name": job.name(fleet_id),
        "resources": resources,
        "file_mounts": inputs.mounts(),
        "setup": setup_script(job, inputs, machine),
        "run": run_script(fleet_id, job, inputs, campaign, machine.max_hours),
    }
    if secret_names:
        config["secrets"] = {name: None for name in secret_names}
    return config
