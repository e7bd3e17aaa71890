"""ONNX Runtime behind the encoder workloads (classification, embeddings): export once, then an optimised session.

The model is exported with `torch.onnx.export` (the dynamo exporter, onnxscript), fp32 on the CPU, with the batch
and the sequence length dynamic; an int8 variant adds ORT's dynamic quantisation of the weights. The export is
written whole into a temporary folder and renamed into the engine cache (core/kinds/engines.py), keyed by model
revision, engine version and these options, so a reader never sees half of it and the next pass reuses it. The
session runs with every graph optimisation on, on the execution provider `options()` named: CUDA or ROCm where
the device is a GPU and the installed onnxruntime has it, the CPU otherwise.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import EngineOptions
from gpucost_mlflow.workloads import engine_cache

OPSET = 18
INPUTS = ("input_ids", "attention_mask")
GPU_PROVIDERS = {"cuda": ("CUDAExecutionProvider", "ROCMExecutionProvider", "MIGraphXExecutionProvider")}
CPU_PROVIDER = "CPUExecutionProvider"


def provider(device_type: str) -> str:
    """The execution provider a pass on this device runs on: the GPU's on a GPU, the CPU's on the CPU. A GPU pass
    whose onnxruntime has no GPU provider is refused, never run on the CPU under a GPU variant's name."""
    import onnxruntime

    if device_type == "cpu":
        return CPU_PROVIDER
    available = onnxruntime.get_available_providers()
    found = next((name for name in GPU_PROVIDERS.get(device_type, ()) if name in available), "")
    if not found:
        raise GpucostError(f"the pass runs on {device_type}, but the installed onnxruntime has only "
                           f"{', '.join(available)}: install onnxruntime-gpu (CUDA) or onnxruntime-rocm (ROCm) in its "
                           "place, or set the variant's device: cpu")
    return found


@dataclass(frozen=True)
class OrtOptions(EngineOptions):
    """What an ONNX export depends on (its cache key, recorded in the manifest): exporter, opset, the torch that
    exported, the graph the session runs, the quantisation, and the provider."""

    exporter: str = "torch.onnx.export (dynamo)"
    opset: int = OPSET
    exported_by_torch: str = ""
    output: str = ""
    graph_optimization: str = "ORT_ENABLE_ALL"
    quantization: str = "none"
    provider: str = ""


def options(settings: Settings, device_type: str, output: str) -> OrtOptions:
    """The export's options for this variant on this device type."""
    import torch

    int8 = settings.quantization == "dynamic-int8"
    return OrtOptions(exported_by_torch=torch.__version__, output=output,
                   quantization="ORT dynamic int8 (QInt8 weights)" if int8 else "none", provider=provider(device_type))


def exported(model, record, output: str) -> tuple[Path, float | None]:
    """The model file of this export, written first when the cache lacks it; returns it and the seconds the export
    took (None when the cache held it)."""
    name = "model.int8.onnx" if OrtOptions.from_record(record.options).quantization != "none" else "model.onnx"

    def build(folder: Path) -> None:
        _export(model, folder / "model.onnx", output)
        if name != "model.onnx":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            # Its advice to pre-process goes to the root logger, on the user's terminal: the options record what ran.
            root = logging.getLogger()
            level, root.level = root.level, logging.ERROR
            try:
                quantize_dynamic(str(folder / "model.onnx"), str(folder / name), weight_type=QuantType.QInt8)
            finally:
                root.setLevel(level)

    folder, seconds = engine_cache.build_cached(record, build)
    return folder / name, seconds


def _export(model, path: Path, output: str) -> None:
    """The fp32 model exported with dynamic batch and sequence, returning only `output` (logits or hidden states)."""
    import torch
    from torch.export import Dim

    class Graph(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return getattr(self.inner(input_ids=input_ids, attention_mask=attention_mask), output)

    example = (torch.ones((2, 8), dtype=torch.long), torch.ones((2, 8), dtype=torch.long))
    batch, sequence = Dim("batch"), Dim("sequence", max=4096)
    shapes = {name: {0: batch, 1: sequence} for name in INPUTS}
    try:
        # The exporter's deprecation notices and progress lines are about its own internals, not the pass.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(Graph(model.eval()), example, str(path), dynamo=True, input_names=list(INPUTS),
                              output_names=[output], dynamic_shapes=shapes, opset_version=OPSET, verbose=False)
    except Exception as exc:  # the exporter's own errors are many; the pass fails with its reason
        raise GpucostError(f"onnx export failed: {exc}") from exc


def session(path: Path, provider_name: str):
    """An inference session with every graph optimisation on, on the named execution provider."""
    import onnxruntime

    chosen = onnxruntime.SessionOptions()
    chosen.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    chosen.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), chosen, providers=[provider_name])


def memory(device) -> dict:
    """Memory peaks of an ORT pass (execution/memory.outside_torch)."""
    from gpucost_mlflow.execution import memory as counters  # deferred: imports torch

    return counters.outside_torch("onnxruntime", device)

