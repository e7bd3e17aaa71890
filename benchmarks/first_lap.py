"""First lap against steady lap (issue 62): how much of a fresh process's first lap is each new input shape's setup,
per variant, on this machine.

Each variant runs one pass in its own child, as a benchmark pass does (the protocol's warm-up, `--laps` laps in one
clock, no MLflow), over the demo's slice. Prints per variant the first lap, the steady lap (the median of the later
ones), their ratio, the setup (first minus steady) and the distinct (batch, padded length) shapes; a ratio above 1.5
is what flags a pass `cold_shapes`.

    .venv/bin/python benchmarks/first_lap.py [--variants batch8,batch8-bf16] [--laps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import get_variant
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.repetitions import Laps
from gpucost_mlflow.core.names import DISTINCT_SHAPES, FIRST_LAP_S, STEADY_LAP_S
from gpucost_mlflow.execution import runner
from gpucost_mlflow.execution.outcome import PassOutcome

ROOT = Path(__file__).resolve().parents[1]


def demo_variants() -> list[str]:
    """What `make demo` runs first on this host (`gpucost demo variants --list`)."""
    found = subprocess.run([str(Path(sys.executable).with_name("gpucost")), "demo", "variants", "--list"],
                           capture_output=True, text=True, check=True)
    return [name for name in found.stdout.strip().split(",") if name]


def one_pass(variant: str, corpus: Path, model: Path, protocol, laps: int, folder: Path) -> dict:
    """The variant's pass in a child of its own (a fresh process, as every benchmark pass): its outcome's metrics."""
    settings = get_variant(ROOT / "projects" / "variants.yaml", variant).settings
    workdir = folder / variant
    workdir.mkdir()
    spec = runner.PassSpec(corpus_path=str(corpus), model_path=str(model), workdir=str(workdir), settings=settings,
                           warmup=dict(protocol.warmup), min_laps=laps, implementation=registry.implementation(settings))
    (workdir / "spec.json").write_text(spec.document(), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "gpucost_mlflow.execution.runner", str(workdir / "spec.json")], check=False)
    outcome = PassOutcome.read(workdir)
    return outcome.measured.metrics if outcome is not None and outcome.completed else {}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="", help="comma-separated (default: gpucost demo variants --list)")
    parser.add_argument("--laps", type=int, default=3)
    parser.add_argument("--protocol", type=Path, default=ROOT / "projects" / "protocol-demo.yaml")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data" / "corpus" / "demo-500.jsonl")
    parser.add_argument("--model", type=Path, default=ROOT / "data" / "model")
    args = parser.parse_args(argv)
    protocol = load_protocol(args.protocol)
    variants = [v for v in args.variants.split(",") if v] or demo_variants()
    rows = []
    print(f"{'variant':<28} {'first s':>9} {'steady s':>9} {'first/steady':>12} {'setup s':>8} {'shapes':>6}")
    with tempfile.TemporaryDirectory(prefix="gpucost-first-lap-") as scratch:
        for variant in variants:
            metrics = one_pass(variant, args.corpus, args.model, protocol, args.laps, Path(scratch))
            if FIRST_LAP_S not in metrics or STEADY_LAP_S not in metrics:
                print(f"{variant:<28} (no completed pass)")
                continue
            laps = Laps(metrics[FIRST_LAP_S], metrics[STEADY_LAP_S], metrics[FIRST_LAP_S] - metrics[STEADY_LAP_S])
            row = {"variant": variant, "first_lap_s": laps.first_s, "steady_lap_s": laps.steady_s,
                   "ratio": laps.ratio, "shape_setup_s": max(0.0, laps.setup_s),
                   "distinct_shapes": metrics.get(DISTINCT_SHAPES)}
            rows.append(row)
            shapes = f"{row['distinct_shapes']:.0f}" if row["distinct_shapes"] is not None else "-"
            print(f"{variant:<28} {laps.first_s:>9.3f} {laps.steady_s:>9.3f} {laps.ratio:>12.2f} "
                  f"{row['shape_setup_s']:>8.3f} {shapes:>6}")
    print(json.dumps(rows))
    return rows


if __name__ == "__main__":
    main()
