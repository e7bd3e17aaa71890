"""MLflow's system-metrics sampling against none: does sampling in the launcher move the child's pass_s?

The launcher samples MLflow's system metrics (tracking/system_metrics.py) while the pass's child runs, outside the
child's clock, but on the same machine. This runs real `gpucost pass` passes of one variant in pairs, sampling on
and off (the launcher's Sampler replaced by a no-op), the order inside each pair alternating, into a throwaway SQLite
store, and prints each side's pass_s (median, min, max), the ratio of medians and each side's own spread (max/min):
sampling is harmless when the ratio sits inside the spread.

    .venv/bin/python benchmarks/system_metrics.py [--variant batch8] [--pairs 4] [--interval 1]
        [--corpus FILE --protocol FILE --model DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]


def one_pass(variant: str, corpus: Path, model: Path, protocol: Path, experiment: str) -> float:
    """A real `gpucost pass`, in this process (the pass itself in its child); its pass_s from the store."""
    from click.testing import CliRunner
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.cli import main

    result = CliRunner().invoke(main, ["pass", "--variant", variant, "--corpus", str(corpus), "--model", str(model),
                                       "--protocol", str(protocol), "--experiment", experiment])
    if result.exit_code != 0:
        raise SystemExit(f"pass failed: {result.output.strip().splitlines()[-1:]}")
    client = MlflowClient()
    found = client.get_experiment_by_name(experiment)
    (run,) = client.search_runs([found.experiment_id], order_by=["attributes.start_time DESC"], max_results=1)
    return run.data.metrics["pass_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="batch8")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--interval", type=float, default=1.0, help="system_metrics_interval_s of the sampled side")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus/comparison.jsonl")
    parser.add_argument("--model", type=Path, default=ROOT / "data/model")
    parser.add_argument("--protocol", type=Path, default=ROOT / "projects/protocol.yaml",
                        help="the corpus's protocol; the sampled side adds its system_metrics_interval_s")
    args = parser.parse_args()

    from gpucost_mlflow.tracking import system_metrics

    with tempfile.TemporaryDirectory(prefix="gpucost-bench-") as temp:
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{temp}/mlflow.db"
        protocol = Path(temp) / "protocol.yaml"
        protocol.write_text(args.protocol.read_text(encoding="utf-8")
                            + f"system_metrics_interval_s: {args.interval:g}\n", encoding="utf-8")
        sampled, plain = [], []
        start = system_metrics.Sampler.start
        try:
            for pair in range(args.pairs):
                for side in (("on", "off") if pair % 2 == 0 else ("off", "on")):
                    system_metrics.Sampler.start = start if side == "on" else (lambda self: self)
                    seconds = one_pass(args.variant, args.corpus.resolve(), args.model.resolve(), protocol, "bench")
                    (sampled if side == "on" else plain).append(seconds)
                    print(f"pair {pair + 1} sampling {side}: pass_s {seconds:.3f}", flush=True)
        finally:
            system_metrics.Sampler.start = start

    def line(name: str, values: list[float]) -> str:
        return (f"{name}: median {statistics.median(values):.3f} s, min {min(values):.3f}, max {max(values):.3f}, "
                f"spread (max/min) {max(values) / min(values):.3f}")

    print(line(f"sampling every {args.interval:g} s", sampled))
    print(line("no sampling", plain))
    print(f"ratio of medians (sampling / none): {statistics.median(sampled) / statistics.median(plain):.3f}")


if __name__ == "__main__":
    main()
