"""The workload kinds gpucost knows, each declared by one entry-point line, as MLflow finds its plug-ins.

A shipped kind is its folder `workloads/<kind>/`, whose `__init__.py` defines `KIND` (a base.Kind),
and one line under `gpucost.workloads` in setup.cfg's entry points (`make install` reads it again). A kind that
lives outside the package (a team's own) is declared by its installed package's entry point of the same group, or in
the environment the pass's child inherits, GPUCOST_WORKLOADS="name:output:package[,...]" (plugins.py). Reading the
registry imports each kind's `__init__` only: no torch, no child code.
"""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import engines, plugins, settings
from gpucost_mlflow.core.kinds.base import Kind
from gpucost_mlflow.core.kinds.settings import DEFAULT_WORKLOAD, Settings

ENVIRONMENT = plugins.ENVIRONMENT


DEFAULT = DEFAULT_WORKLOAD
PYTHON = "python"  # user code, declared as python:PATH_OR_MODULE (core/inputs/workloads.py)


def shipped() -> tuple[Kind, ...]:
    """The kinds this package declares (its own entry points), by name: the classifier first."""
    own = plugins.declared(plugins.WORKLOADS, Kind, own=True)
    if not any(kind.name == DEFAULT for kind in own):
        raise GpucostError("no built-in workload kind is declared: gpucost-mlflow's entry points are missing or stale "
                           "(install it: make install, or pip install -e .)")
    return own


def kinds() -> tuple[Kind, ...]:
    """The shipped kinds, then those other installed packages declare (entry points), then those the environment
    declares (read now, so a child sees what its parent saw)."""
    return (shipped() + plugins.declared(plugins.WORKLOADS, Kind)
            + tuple(Kind(*item) for item in plugins.environment_items(os.environ.get(ENVIRONMENT, ""))))


def built_in() -> tuple[str, ...]:
    """The names a variant's `workload:` may give as they are (every kind but user code)."""
    return tuple(kind.name for kind in kinds() if kind.name != PYTHON)


def outputs() -> dict[str, str]:
    """What each named kind delivers."""
    return {kind.name: kind.output for kind in kinds() if kind.output}


def kind(name: str) -> Kind:
    """The kind of a parsed workload (`python` for user code); KeyError for a name no kind carries."""
    return {kind.name: kind for kind in kinds()}[name]


def default_module(name: str) -> ModuleType:
    """A module of the default kind's folder by name (the classifier's demo inputs, its memory probe), imported only
    when asked: the CLI's one way to a kind's own code, never importing its folder."""
    return kind(DEFAULT).module(name)


def for_output(output: str) -> Kind:
    """The first kind that delivers this output: whose model `--model auto` loads under such a protocol."""
    return next(kind for kind in kinds() if kind.output == output)


def of_workload(declared: str) -> Kind:
    """The kind a declared workload names (a kind's name, or python:... for user code)."""
    return kind(PYTHON if declared.startswith(f"{PYTHON}:") else declared)


def of_settings(settings: Settings) -> Kind:
    """The kind a pass's settings name."""
    return of_workload(settings.workload)


def setting_names() -> tuple[str, ...]:
    """Every setting a variant of any kind may declare: the shared ones, then each kind's own."""
    return tuple(dict.fromkeys(name for kind in kinds() for name in settings.names(kind.settings_record())))


def implementation(settings: Settings) -> str:
    """The module a pass's child loads its workload from (`load(spec, device) -> Work`): the kind the settings name, on
    their engine. The launcher writes it into the pass's spec, so the harness never asks the registry."""
    return engines.engine(settings.engine).module(of_settings(settings).package)


def served_by(engine_name: str) -> tuple[str, ...]:
    """The kinds an engine serves: those it names, else every kind whose folder holds its implementation."""
    chosen = engines.engine(engine_name)
    if chosen.kinds:
        return chosen.kinds
    return tuple(kind.name for kind in kinds() if _present(chosen.module(kind.package)))


def _present(module: str) -> bool:
    """Whether a module can be found, without importing it (its package's light `__init__` is)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # its package is not importable here: nothing to serve
        return False


def endpoint_apis(name: str) -> tuple[str, ...]:
    """The `endpoint.api` values a kind's `with_openai.py` sends, as its Kind declares them; () when it names none."""
    return kind(name).endpoint_apis


def check_engine(name: str, kind: str, settings: Settings, where: str) -> None:
    """Refuse, in one line, a variant whose engine does not serve its workload kind, or does not take its precision,
    quantization or compile (engines.check_settings), or whose endpoint asks an api its kind does not send."""
    served = served_by(name)
    if kind not in served:
        raise GpucostError(f"{where}: engine {name} does not serve workload {kind} (it serves {', '.join(served)})")
    engines.check_settings(name, settings, where)
    apis = endpoint_apis(kind) if settings.endpoint is not None else ()
    if apis and settings.endpoint.api not in apis:
        raise GpucostError(f"{where}: workload {kind} sends endpoint.api {' or '.join(apis)}, not "
                           f"{settings.endpoint.api}; declare endpoint.api: {apis[0]}")


def output_names() -> tuple[str, ...]:
    """What a protocol may judge (`acceptance.output`): every output a kind delivers, the shipped kinds' first."""
    return tuple(dict.fromkeys(kind.output for kind in kinds() if kind.output))


def sections() -> dict[str, str]:
    """The protocol sections an output brings (a generation task's prompt and tokens), each with its output."""
    return {rules.SECTION: name for name in output_names() if (rules := output(name)).SECTION}


def exported_files() -> tuple[str, ...]:
    """Every file a pass may export as its deliverable, whatever its output: what its attempt publishes."""
    return tuple(name for output_name in output_names() for name in output(output_name).FILES)


def output(name: str) -> ModuleType:
    """The pure rules of an output (base.Output), from the first kind that delivers it (a shipped kind's before a
    plug-in's: a new kind delivering labels is judged by the classifier's rules; a kind bringing a new output brings
    its `output.py`); KeyError for an output no kind delivers."""
    owner = next((kind for kind in kinds() if kind.output == name), None)
    if owner is None:
        raise KeyError(name)
    return owner.output_rules()
