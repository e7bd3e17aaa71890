"""Cold against warm forwards of the classifier, per attention setting: what a new (batch, length) shape costs.

On one H200 (2026-12-04) every bf16 pass took 6.2-8.2 s against 0.66-0.77 s for fp32: likely cuDNN's attention
building a plan for each new (batch, length) shape, which padding to each batch's longest input makes many of. This
probe times bf16 forwards of the model over padded widths 10, 20, ... 80 at batch 8, twice: cold (each width the
first time in the process, after one forward at another width has paid the process's own start) then warm. It runs
once per setting, each in a fresh process: PyTorch's default SDPA backend, and cuDNN attention off
(`torch.backends.cuda.enable_cudnn_sdp(False)` and TORCH_CUDNN_SDPA_DEPRIORITIZED=1). A cold/warm ratio far above 1
under the default and near 1 with cuDNN off says the plans are the cost.

On a CPU it runs too: fp32 there (bf16 is emulated on a CPU without native bf16) and cuDNN does not apply, both said.

    python benchmarks/cold_warm.py --model data/model [--small] [--out cold-warm.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

WIDTHS = tuple(range(10, 81, 10))
SMALL_WIDTHS = (10, 20, 40, 80)
BATCH = 8
FIRST_WIDTH = 4  # the forward that pays CUDA's context, cuBLAS's handles and the allocator before any timed width
SETTINGS = ("default", "cudnn-off")
CUDNN_OFF_ENV = {"TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"}


@dataclass(frozen=True)
class Probe:
    """One setting's forwards: seconds per width, cold then warm (the best of the warm repeats)."""

    setting: str
    device: str
    precision: str
    cold_s: dict[int, float]
    warm_s: dict[int, float]
    note: str = ""

    def ratio(self) -> float:
        """Cold over warm, summed over the widths."""
        return sum(self.cold_s.values()) / max(sum(self.warm_s.values()), 1e-9)

    def worst(self) -> tuple[int, float]:
        """The width whose cold forward cost most against its warm one, and that ratio."""
        width = max(self.cold_s, key=lambda w: self.cold_s[w] / max(self.warm_s[w], 1e-9))
        return width, self.cold_s[width] / max(self.warm_s[width], 1e-9)

    def line(self) -> str:
        """'default: cold 1.234 s, warm 0.045 s over widths 10-80 (bf16, cuda): cold/warm 27.4, worst 41.0 at 80'."""
        width, worst = self.worst()
        widths = sorted(self.cold_s)
        return (f"{self.setting}: cold {sum(self.cold_s.values()):.3f} s, warm {sum(self.warm_s.values()):.3f} s over "
                f"widths {widths[0]}-{widths[-1]} ({self.precision}, {self.device}): cold/warm {self.ratio():.1f}, "
                f"worst {worst:.1f} at {width}" + (f"; {self.note}" if self.note else ""))


def _batch(width: int, vocab: int, device):
    """Batch 8 padded to `width`: the last input shorter by a quarter, so attention runs with a padding mask."""
    import torch

    generator = torch.Generator().manual_seed(width)
    ids = torch.randint(1000, vocab, (BATCH, width), generator=generator)
    mask = torch.ones(BATCH, width, dtype=torch.long)
    mask[-1, width - max(1, width // 4):] = 0
    return ids.to(device), mask.to(device)


def measure(model_dir: Path, setting: str, widths: tuple[int, ...], repeats: int = 3) -> Probe:
    """In this process: load the model, one forward at FIRST_WIDTH, then each width cold, then each warm."""
    import torch
    from transformers import AutoModelForSequenceClassification

    on_gpu = torch.cuda.is_available()
    device = torch.device("cuda" if on_gpu else "cpu")
    notes = []
    if setting == "cudnn-off":
        if on_gpu:
            torch.backends.cuda.enable_cudnn_sdp(False)
        else:
            notes.append("a CPU: cuDNN does not apply, the setting changes nothing")
    precision, dtype = ("bf16", torch.bfloat16) if on_gpu else ("fp32", torch.float32)
    if not on_gpu:
        notes.append("fp32 on a CPU (bf16 is emulated without native bf16)")
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), dtype=dtype,
                                                               attn_implementation="sdpa").to(device).eval()
    vocab = int(model.config.vocab_size)

    def forward(width: int) -> float:
        ids, mask = _batch(width, vocab, device)
        if on_gpu:
            torch.cuda.synchronize()
        began = time.perf_counter()
        with torch.inference_mode():
            model(input_ids=ids, attention_mask=mask)
        if on_gpu:
            torch.cuda.synchronize()
        return time.perf_counter() - began

    forward(FIRST_WIDTH)
    cold = {width: forward(width) for width in widths}
    warm = {width: min(forward(width) for _ in range(repeats)) for width in widths}
    return Probe(setting, device.type, precision, cold, warm, "; ".join(notes))


def _child(args: argparse.Namespace) -> int:
    probe = measure(args.model, args.setting, tuple(args.widths))
    print(json.dumps(asdict(probe)))
    return 0


def _from_json(text: str) -> Probe:
    data = json.loads(text)
    for key in ("cold_s", "warm_s"):
        data[key] = {int(width): seconds for width, seconds in data[key].items()}
    return Probe(**data)


def run_setting(model_dir: Path, setting: str, widths: tuple[int, ...], timeout_s: float = 240) -> Probe:
    """One setting in a fresh process, so its cold widths are cold: nothing of the other setting's run is cached."""
    env = dict(os.environ, **(CUDNN_OFF_ENV if setting == "cudnn-off" else {}))
    command = [sys.executable, str(Path(__file__).resolve()), "child", "--model", str(model_dir), "--setting", setting,
               "--widths", *map(str, widths)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-1:])
        raise RuntimeError(f"{setting}: exit {done.returncode}: {tail[:300]}")
    return _from_json(done.stdout.strip().splitlines()[-1])


def summary(probes: list[Probe]) -> str:
    """The closing line: each setting's cold/warm ratio, and how the default's compares with cuDNN off."""
    ratios = ", ".join(f"{p.setting} {p.ratio():.1f}" for p in probes)
    by = {p.setting: p for p in probes}
    said = f"cold/warm over {len(probes[0].cold_s)} widths at batch {BATCH}: {ratios}"
    if "default" in by and "cudnn-off" in by:
        cold = sum(by["default"].cold_s.values()) / max(sum(by["cudnn-off"].cold_s.values()), 1e-9)
        said += f"; the default's cold forwards took {cold:.1f} times cuDNN-off's"
    return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="probe", choices=["probe", "child"])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--small", action="store_true", help=f"widths {', '.join(map(str, SMALL_WIDTHS))} only")
    parser.add_argument("--setting", choices=SETTINGS, default="default")
    parser.add_argument("--widths", type=int, nargs="+", default=None)
    parser.add_argument("--out", type=Path, default=None, help="also write the timings as JSON here")
    args = parser.parse_args(argv)
    args.widths = args.widths or (SMALL_WIDTHS if args.small else WIDTHS)
    if args.mode == "child":
        return _child(args)
    probes = []
    for setting in SETTINGS:
        try:
            probes.append(run_setting(args.model, setting, tuple(args.widths)))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"cold/warm probe failed: {exc}")
            return 1
        print(probes[-1].line(), flush=True)
    if args.out:
        args.out.write_text(json.dumps([asdict(p) for p in probes], indent=1) + "\n", encoding="utf-8")
    print(summary(probes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
