"""The attention kernel of a pass: the variant's `sdpa_backend` pinned around every call of its process (warm-up and
measured part), and the kernel torch's scaled_dot_product_attention selects for its first measured batch, named for
the manifest's stack (PROTOCOL.md §2: "attention backend").

The choice is asked once the clock stopped: a forward pre-hook keeps the arguments of each process call's first model
forward (references only: no copy, no sync), and the kind's after-pass callback replays that forward, under the pin,
up to its first SDPA call, where `torch._fused_sdp_choice` answers for the very tensors, mask and flags the model
passes. Only the `TORCH_CUDNN_SDPA_*` variables' values are read from the environment: torch's switches, no secret.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.kinds.base import Work
from gpucost_mlflow.core.kinds.settings import SDPA_DEFAULT, Settings
from gpucost_mlflow.core.records import Record
from gpucost_mlflow.execution.outcome import PassFailure

# The variant's names (core/inputs/variants.py CHOICES) of torch's backends
PINS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
NAMES = {**{int(backend): name for name, backend in PINS.items()}, int(SDPBackend.OVERRIDEABLE): "overrideable"}
# The aten kernel each choice dispatches to; on the CPU, torch's "flash" is its own fused CPU kernel
KERNELS = {
    ("cpu", "flash"): "aten::_scaled_dot_product_flash_attention_for_cpu",
    ("cuda", "flash"): "aten::_scaled_dot_product_flash_attention",
    ("cuda", "efficient"): "aten::_scaled_dot_product_efficient_attention",
    ("cuda", "cudnn"): "aten::_scaled_dot_product_cudnn_attention",
    ("cuda", "overrideable"): "aten::_scaled_dot_product_fused_attention_overrideable",
}
MATH_KERNEL = "aten::_scaled_dot_product_attention_math"
FLAGS = ("flash", "mem_efficient", "math", "cudnn")  # torch.backends.cuda.<flag>_sdp_enabled(), where this torch has it
CUDNN_ENV_PREFIX = "TORCH_CUDNN_SDPA_"
FEW_KV_HEADS = 8  # cuDNN attention below this many KV heads: silent corruption reported on B200
CUDNN_ISSUE = "pytorch/pytorch#193893"
NO_KERNEL = ("No viable backend for scaled_dot_product_attention", "No available kernel")
NONE = "none"  # the replayed forward made no SDPA call (eager attention)
UNKNOWN = "unknown"  # not observed; the note says why


@dataclass(frozen=True)
class Choice(Record):
    """What the manifest's stack records of a pass's attention (`stack.sdpa`), as the child saw it."""

    backend: str  # flash | efficient | cudnn | math | overrideable; none: no SDPA call; unknown: not observed
    kernel: str  # the aten kernel that backend dispatches to on the device; '' when none
    pinned: str  # the variant's sdpa_backend
    attn_implementation: str  # the model's, as transformers loaded it (sdpa, eager, ...); '' when no config
    enabled: dict[str, bool] = field(default_factory=dict)  # torch's *_sdp_enabled() flags when asked (pin included)
    cudnn_env: dict[str, str] = field(default_factory=dict)  # the TORCH_CUDNN_SDPA_* variables set
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    call: dict = field(default_factory=dict)  # the first SDPA call's query, key, value, mask and flags
    note: str = ""


def pinned(backend: str) -> contextlib.AbstractContextManager:
    """torch's sdpa_kernel restricted to the variant's backend; nothing pinned for `default`."""
    return contextlib.nullcontext() if backend == SDPA_DEFAULT else sdpa_kernel([PINS[backend]])


def enabled_flags() -> dict[str, bool]:
    """torch.backends.cuda's `<flag>_sdp_enabled()` switches this torch offers, as they read now."""
    found = {name: getattr(torch.backends.cuda, f"{name}_sdp_enabled", None) for name in FLAGS}
    return {name: bool(read()) for name, read in found.items() if read is not None}


def cudnn_env() -> dict[str, str]:
    """The TORCH_CUDNN_SDPA_* environment variables set, with their values."""
    return {key: value for key, value in sorted(os.environ.items()) if key.startswith(CUDNN_ENV_PREFIX)}


def kernel_of(backend: str, device_type: str) -> str:
    """The aten kernel a backend's choice dispatches to on a device type."""
    if backend == "math":
        return MATH_KERNEL
    return KERNELS.get((device_type, backend), "")


def cudnn_note(backend: str, kv_heads: int | None) -> str:
    """The warning a cuDNN choice with fewer than 8 KV heads carries."""
    if backend != "cudnn" or kv_heads is None or kv_heads >= FEW_KV_HEADS:
        return ""
    return (f"cuDNN attention with {kv_heads} KV heads (< {FEW_KV_HEADS}): silent corruption reported on B200 "
            f"({CUDNN_ISSUE}); compare its outputs with the reference")


def refused(exc: BaseException, backend: str, device_type: str) -> GpucostError | None:
    """The pass's reason when torch found no kernel for a pinned backend; None for any other failure."""
    if backend == SDPA_DEFAULT or not isinstance(exc, RuntimeError) or not any(m in str(exc) for m in NO_KERNEL):
        return None
    return GpucostError(f"sdpa_backend {backend} refused on {device_type}: {one_line(exc)}")


def attn_implementation(model) -> str:
    """The attention implementation transformers loaded the model with; '' for a model without a config."""
    config = getattr(getattr(model, "_orig_mod", model), "config", None)
    return str(getattr(config, "_attn_implementation", "") or "") if config is not None else ""


def heads(model) -> tuple[int | None, int | None]:
    """The model's attention heads and key/value heads (as many as attention heads without grouped queries)."""
    config = getattr(getattr(model, "_orig_mod", model), "config", None)
    query = getattr(config, "num_attention_heads", None)
    return query, getattr(config, "num_key_value_heads", None) or query


class _Stop(Exception):
    """Ends the replayed forward at its first SDPA call: the choice is asked, nothing more is computed."""


def _described(tensor) -> dict | None:
    return None if tensor is None else {"shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch."),
                                        "device": str(tensor.device)}


class _FirstAttention(TorchFunctionMode):
    """Sees the torch calls of a forward; at the first scaled_dot_product_attention, asks torch's choice for its
    arguments and stops the forward."""

    asked: tuple[int | str, dict] | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not torch.nn.functional.scaled_dot_product_attention:
            return func(*args, **kwargs)
        self.asked = _ask(*args, **kwargs)
        raise _Stop


def _ask(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
         ) -> tuple[int | str, dict]:
    """torch's choice for one SDPA call (its backend's index, or why it found none) and what it was asked for."""
    call = {"query": _described(query), "key": _described(key), "value": _described(value),
            "attn_mask": _described(attn_mask), "dropout_p": dropout_p, "is_causal": bool(is_causal), "scale": scale,
            "enable_gqa": bool(enable_gqa)}
    try:
        return torch._fused_sdp_choice(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                       enable_gqa=enable_gqa), call
    except RuntimeError as exc:
        return f"no kernel: {one_line(exc)}", call


def _kept(value):
    """A forward argument as the replay gets it: tensors and plain values as they are, anything else (a KV cache: it
    holds the batch's keys and values on the device, and changes as the batch generates) as None."""
    return value if isinstance(value, (torch.Tensor, bool, int, float, str)) else None


class Observer:
    """Keeps each process call's first model forward (a pre-hook, armed as the call starts) and names, once the clock
    stopped, the kernel torch selects for that forward's first SDPA call."""

    def __init__(self, model, backend: str, device_type: str) -> None:
        self.model, self.backend, self.device_type = model, backend, device_type
        self.armed = False
        self.call: tuple[tuple, dict] | None = None
        self.hooked = isinstance(model, torch.nn.Module)
        if self.hooked:
            model.register_forward_pre_hook(self._keep, with_kwargs=True)

    def _keep(self, module, args, kwargs) -> None:
        if self.armed:
            self.armed = False
            self.call = (tuple(_kept(a) for a in args), {key: _kept(value) for key, value in kwargs.items()})

    def choice(self) -> Choice:
        """The kernel torch selects for the kept forward's first SDPA call, under the variant's pin; the kept
        forward is released."""
        query_heads, kv_heads = heads(self.model)
        with pinned(self.backend):
            backend, call, note = self._replayed()
            enabled = enabled_flags()
        return Choice(backend=backend, kernel=kernel_of(backend, self.device_type), pinned=self.backend,
                      attn_implementation=attn_implementation(self.model), enabled=enabled, cudnn_env=cudnn_env(),
                      num_attention_heads=query_heads, num_key_value_heads=kv_heads, call=call,
                      note="; ".join(filter(None, [note, cudnn_note(backend, kv_heads)])))

    def _replayed(self) -> tuple[str, dict, str]:
        if not self.hooked:
            return UNKNOWN, {}, "the workload's model is not a torch module the harness calls"
        if self.call is None:
            return UNKNOWN, {}, "no forward of the model was seen in the measured part"
        (args, kwargs), self.call = self.call, None
        spy = _FirstAttention()
        try:
            with torch.inference_mode(), spy:  # a compiled model's eager module: the same tensors, no recompilation
                getattr(self.model, "_orig_mod", self.model)(*args, **kwargs)
        except _Stop:
            pass
        except Exception as exc:  # noqa: BLE001 - the record says why the choice is unknown; the pass stands
            return UNKNOWN, {}, f"replaying the first measured forward failed: {type(exc).__name__}: {one_line(exc)}"
        if spy.asked is None:
            return NONE, {}, "the model's forward made no scaled_dot_product_attention call"
        index, call = spy.asked
        if isinstance(index, str):
            return UNKNOWN, call, index
        return NAMES.get(index, f"backend {index}"), call, ""


def observed(work: Work, settings: Settings, device) -> Work:
    """The work with its process run under the variant's sdpa_backend (a backend torch refuses there fails the pass
    with that reason) and its after-pass figures joined by the attention choice (`stack.sdpa`). A pinned backend on
    a model whose attention does not go through SDPA is refused here, as it loads."""
    backend = settings.sdpa_backend
    implementation = attn_implementation(work.model)
    if backend != SDPA_DEFAULT and implementation and implementation != "sdpa":
        raise GpucostError(f"sdpa_backend {backend} pins torch's scaled_dot_product_attention, which the model's "
                           f"attention ({implementation}) does not call; set attention: sdpa")
    observer = Observer(work.model, backend, torch.device(device).type)
    return replace(work, process=_pinned_process(work.process, observer),
                   utilisation=_with_choice(work.utilisation, observer))


def _pinned_process(process: Callable, observer: Observer) -> Callable:
    def run(*args, **kwargs):
        observer.armed = True
        try:
            with pinned(observer.backend):
                return process(*args, **kwargs)
        except PassFailure as failure:
            reason = refused(failure.cause, observer.backend, observer.device_type)
            if reason is None:
                raise
            raise PassFailure(reason, failure.partial, failure.elapsed_s) from failure.cause
        except RuntimeError as exc:
            reason = refused(exc, observer.backend, observer.device_type)
            if reason is None:
                raise
            raise reason from exc
        finally:
            observer.armed = False

    return run


def _with_choice(utilisation: Callable, observer: Observer) -> Callable:
    def after(outputs, pass_s):
        return {**utilisation(outputs, pass_s), "stack": {"sdpa": observer.choice().record()}}

    return after
