"""The inference engines a variant may run its workload on (`engine:`), one line each, and the cache of their exports.

An engine is one more implementation behind a workload kind: `<kind package>.with_<engine>` offers the same
`load(spec, device) -> Work` as the kind's `child.py` (which is the `torch` engine), and `options(settings)`:
what its export or conversion depends on. Engines other than torch are optional packages: a variant that asks
for one that is not installed is refused in one line naming the package and how to install it, before any run
is recorded. Pure: nothing here imports an engine; their export cache is workloads/engine_cache.py.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from types import ModuleType

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import plugins
from gpucost_mlflow.core.kinds.settings import DEFAULT_ENGINE, SDPA_DEFAULT, Settings

DEFAULT = DEFAULT_ENGINE
ENDPOINT = "openai"  # the engine that sends the corpus to an endpoint (core/kinds/endpoint.py)


@dataclass(frozen=True)
class Engine:
    """One engine: the modules it needs, the distributions that may provide it (whose version is recorded), how to
    install it, the workload kinds it serves and the precisions and quantizations it takes."""

    name: str
    modules: tuple[str, ...]
    distributions: tuple[str, ...]
    install: str
    # The kinds it serves when it names them (a plug-in's); () for every kind whose folder holds its implementation
    # (`with_<engine>.py`, torch's `child.py`): registry.served_by reads them off the folders.
    kinds: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ("fp32", "bf16", "fp16")
    quantizations: tuple[str, ...] = ("none", "dynamic-int8")

    def missing(self) -> list[str]:
        """The modules it needs that cannot be imported here."""
        return [module for module in self.modules if importlib.util.find_spec(module) is None]

    def version(self) -> str:
        """The installed version of the first of its distributions present, named when it is not the first
        ('1.22.0 (onnxruntime-gpu)'); '' when none is installed."""
        for number, distribution in enumerate(self.distributions):
            try:
                found = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                continue
            return found if number == 0 else f"{found} ({distribution})"
        return ""

    def module(self, package: str) -> str:
        """The module of its implementation behind a kind: the kind's `child` for torch, `<package>.with_<engine>`
        otherwise."""
        return f"{package}.child" if self.name == DEFAULT else f"{package}.with_{self.name}"

    def implementation(self, package: str) -> ModuleType:
        """That module, imported."""
        return importlib.import_module(self.module(package))


ENGINES = (
    Engine(DEFAULT, ("torch",), ("torch",), "pip install torch"),
    Engine("onnxruntime", ("onnxruntime", "onnx", "onnxscript"), ("onnxruntime", "onnxruntime-gpu", "onnxruntime-rocm"),
           "pip install onnxruntime onnx onnxscript (CUDA: onnxruntime-gpu; ROCm: onnxruntime-rocm)",
           precisions=("fp32",)),
    Engine("ctranslate2", ("ctranslate2",), ("ctranslate2",), "pip install ctranslate2 (its wheels carry CPU and CUDA)",
           precisions=("fp32", "bf16", "fp16")),
    Engine("vllm", ("vllm",), ("vllm",), "pip install vllm (CUDA or ROCm machines)",
           precisions=("fp32", "bf16", "fp16"), quantizations=("none",)),
    # Any OpenAI-compatible endpoint (vllm serve, SGLang, transformers serve, a hosted API): its server decides the
    # numerics, so the variant's precision only names what the server was asked to run.
    Engine(ENDPOINT, ("openai",), ("openai",), "pip install openai (transformers[serving] brings it)",
           quantizations=("none",)),
)


def known() -> tuple[Engine, ...]:
    """The shipped engines, then those installed packages declare (entry point `gpucost.engines`, plugins.py)."""
    return ENGINES + plugins.declared(plugins.ENGINES, Engine)


def names() -> tuple[str, ...]:
    """Every engine a variant may name."""
    return tuple(engine.name for engine in known())


def engine(name: str) -> Engine:
    """The engine of this name; KeyError for another."""
    return {engine.name: engine for engine in known()}[name]


def check_settings(name: str, settings: Settings, where: str) -> None:
    """Refuse, in one line, a variant whose engine does not take its precision, quantization, compile or sdpa_backend
    (torch.compile and the SDPA kernel are torch's own); whether it serves the variant's kind is
    registry.check_engine's."""
    chosen = engine(name)
    if (name == ENDPOINT) != (settings.endpoint is not None):
        raise GpucostError(f"{where}: engine {ENDPOINT} sends the corpus to the endpoint a variant declares: "
                           + ("declare endpoint (base_url or serve, model)" if name == ENDPOINT else
                              f"endpoint is for engine {ENDPOINT}, not {name}"))
    _check_sdpa_backend(name, settings, where)
    if name == DEFAULT:
        return
    if settings.compile:
        raise GpucostError(f"{where}: compile is torch.compile, which engine {name} does not run; set compile: false")
    if settings.precision not in chosen.precisions:
        raise GpucostError(f"{where}: engine {name} takes precision {' or '.join(chosen.precisions)}, not "
                           f"{settings.precision}")
    if settings.quantization not in chosen.quantizations:
        raise GpucostError(f"{where}: engine {name} takes quantization {' or '.join(chosen.quantizations)}, not "
                           f"{settings.quantization}")


def _check_sdpa_backend(name: str, settings: Settings, where: str) -> None:
    """Refuse a pinned sdpa_backend where torch's scaled_dot_product_attention does not run: another engine, or a
    model loaded with eager attention (execution/attention.py pins it)."""
    backend = settings.sdpa_backend
    if backend == SDPA_DEFAULT:
        return
    if name != DEFAULT:
        raise GpucostError(f"{where}: sdpa_backend pins torch's attention kernel, which engine {name} does not run; "
                           f"set sdpa_backend: {SDPA_DEFAULT}")
    if settings.attention != "sdpa":
        raise GpucostError(f"{where}: sdpa_backend {backend} pins torch's scaled_dot_product_attention, which "
                           f"attention: {settings.attention} does not call; set attention: sdpa")


def check_installed(name: str, variant: str) -> None:
    """Refuse a variant whose engine is not installed: one line naming the package and how to install it."""
    chosen = engine(name)
    missing = chosen.missing()
    if missing:
        raise GpucostError(f"variant '{variant}' runs on engine {name}, but {', '.join(missing)} is not installed "
                           f"here: {chosen.install}")
