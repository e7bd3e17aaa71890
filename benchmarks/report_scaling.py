"""Report scaling: the decision report's read path against a plain `mlflow.search_runs` of the same experiment.

For each size, a fresh SQLite store (`sqlite:///<tmpdir>/mlflow.db`) gets one experiment (protocol
locked, as `gpucost protocol lock` does) holding N pass runs shaped like the launcher's: nested
under campaign runs, 18 params, 25-27 metrics (7 for a failed pass), 25-29 tags, written through `MlflowClient.create_run`,
one `log_batch` and `set_terminated` per run. Then, three times each (median kept):

  search_runs_s  `mlflow.search_runs(experiment_ids=[id])` (plain: default args, DataFrame, all pages)
  attempts_s     the attempts table alone: `tracking.reader.attempts` and its table (`attempts_table.frame`)
  report_s       the report's read and build: `tracking.evidence.read` then `report.build.build(...)` (assess,
                 separations, figures), the experiment resolved once before either

and prints report_s / search_runs_s (target <= 0.15 at 5,000 runs, issue 65) and the time per run (growth no
worse than linear when it does not rise with the size).

    .venv/bin/python benchmarks/report_scaling.py [--sizes 1000,5000,10000] [--repeats 3]
        [--report-timeout 120] [--dir /dev/shm] [--keep]

A `build` that runs past --report-timeout is stopped and shown as "> T" (not repeated): an
unbounded step (the exact permutation test once enumerated every split) then shows as a stop, not a hang.
The stores go to --dir (default /dev/shm where it exists: SQLite on disk syncs every commit and
writing 10,000 runs takes ~66 ms a run instead of ~18 ms; reading is the same once cached).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.report.build import build
from gpucost_mlflow.tracking import evidence, experiments, reader, schema
from gpucost_mlflow.tracking.attempts_table import frame

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "projects/protocol.yaml"
CATALOG = ROOT / "catalog/labkit-2026-09-24.csv"
VARIANTS = ROOT / "projects/variants.yaml"
EXPERIMENT = "report-scaling"
PASSES_PER_VARIANT = 5
START_MS = 1_796_108_400_000  # 2026-12-01T07:00:00Z; one pass every 20 s after it

DEVICES = {  # device name -> (backend, memory metrics, memory counter, base pass_s for batch8)
    "NVIDIA B200": ("cuda", ("mem_peak_allocated_bytes", "mem_peak_reserved_bytes"),
                    "torch.cuda.max_memory_allocated / max_memory_reserved (peak since reset before the pass)", 1.2),
    "AMD EPYC": ("cpu", ("mem_peak_rss_bytes",),
                 "process peak RSS (getrusage ru_maxrss of the pass's child process, whole lifetime including load)", 10.0),
}
SPEED = {"batch1": 3.1, "batch4": 1.3, "batch8": 1.0, "batch8-bf16": 0.7, "batch8-int8": 0.8, "batch8-lengthgrouped": 0.85}
LABELS = ("fresh", "plot", "rotten")
BUCKETS = ("long", "medium", "short")
REFERENCE = "batch8"
CACHE_POLICY = ("fresh child process per pass; model and tokenizer files read from local disk "
                "(OS page cache warm after the first pass)")


def _hex(rng: random.Random, n: int = 64) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


class Shape:
    """Everything constant across runs of one store: digests, fingerprints, variant settings."""

    def __init__(self, rng: random.Random, protocol, variants):
        self.protocol = protocol
        self.variants = variants
        self.fingerprint = _hex(rng)
        self.model_revision, self.tokenizer_revision, self.order_digest = _hex(rng), _hex(rng), _hex(rng)
        self.params = {
            name: {f"setting.{k}": str(v) for k, v in variant.settings.record().items()}
            | {
                "model.revision": self.model_revision,
                "model.tokenizer_revision": self.tokenizer_revision,
                "corpus.order_digest": self.order_digest,
                "warmup.inputs": str(protocol.warmup["inputs"]),
                "warmup.passes": str(protocol.warmup["passes"]),
                "seed.torch": "0",
                "seed.deterministic_algorithms": "False",
                "seed.cudnn_deterministic": "False",
                "seed.cudnn_benchmark": "False",
            }
            for name, variant in variants.items()
        }


def _pass_payload(rng: random.Random, shape: Shape, device: str, variant: str, outcome: str, slot: dict,
                  when_ms: int) -> tuple[list, list, list]:
    """(metrics, params, tags) of one finished pass, as `_run_pass` logs them."""
    backend, memory_keys, counter, base = DEVICES[device]
    metrics: dict[str, float] = {"load_s": rng.uniform(2.0, 3.5), "warmup_s": rng.uniform(0.1, 0.4)}
    checks: dict[str, str] = {}
    if outcome == "failed":
        completed = rng.randrange(0, 1000)
        metrics.update(eval_s=rng.uniform(0.001, 0.01), expected_ids=1000, observed_ids=0,
                       completed_entries=completed, elapsed_until_failure_s=rng.uniform(0.5, 9.0))
        reason = rng.choice(["killed by signal SIGKILL", "child exited with code 1 without an outcome",
                             "interrupted"])
        checks = {"format": "fail: no predictions file", "ids": "fail: 0 of 1000 expected ids",
                  "coverage": "fail: 0 of 1000 inputs have a prediction (0.0 %)"}
        status_tags = {schema.STATUS: "failed", schema.STATUS_REASON: reason, schema.MEMORY_COUNTER: "",
                       schema.QUALITY_VERDICT: ""}
    else:
        pass_s = base * SPEED[variant] * rng.gauss(1.0, 0.02)
        metrics.update(pass_s=pass_s, export_s=rng.uniform(0.005, 0.01), eval_s=rng.uniform(0.003, 0.006),
                       expected_ids=1000, observed_ids=1000, completed_entries=1000)
        for key in memory_keys:
            metrics[key] = float(rng.randrange(600, 900) * 2**20)
        f1 = rng.uniform(0.78, 0.87) if outcome == "rejected" else rng.uniform(0.84, 0.87)
        metrics.update(accuracy=f1 - 0.03, macro_f1=f1)
        for bucket in BUCKETS:
            metrics[f"bucket_{bucket}_accuracy"] = rng.uniform(0.8, 0.93)
            metrics[f"bucket_{bucket}_macro_f1"] = rng.uniform(0.66, 0.84)
        for label in LABELS:
            for key in ("precision", "recall", "f1"):
                metrics[f"class_{label}_{key}"] = rng.uniform(0.75, 0.97)
        quality = f1 >= 0.80
        checks = {"format": "pass: every line has id, a known label and a numeric score",
                  "ids": "pass: exactly the 1000 expected ids",
                  "coverage": "pass: 1000 of 1000 inputs have a prediction (100.0 %)",
                  "quality": f"{'pass' if quality else 'fail'}: macro_f1 {f1:.4f} {'>=' if quality else '<'} 0.8",
                  "buckets": "pass: macro_f1 >= 0.6 in every bucket (long, medium, short)"}
        if variant != REFERENCE:
            checks["reference_agreement"] = "pass: 0.991 of inputs share the reference's label (>= 0.97)"
            checks["reference_metric"] = "pass: |macro_f1 - reference| 0.004 <= 0.02 on the corpus and every bucket"
        failed = [name for name, text in checks.items() if text.startswith("fail")]
        status = "rejected" if failed else "accepted"
        status_tags = {
            schema.STATUS: status,
            schema.STATUS_REASON: "; ".join(f"{n}: {checks[n][6:]}" for n in failed) or "every check passed",
            schema.MEMORY_COUNTER: counter,
            schema.QUALITY_VERDICT: "failed: quality" if failed else "passed",
        }
    tags = {
        schema.ROLE: "benchmark", schema.VARIANT: variant, schema.LAUNCHER: f"bench-host:{rng.randrange(1000, 99999)}",
        schema.DEVICE_NAME: device, schema.BACKEND: backend, schema.CORPUS_FINGERPRINT: shape.fingerprint,
        schema.PROTOCOL_DIGEST: shape.protocol.digest, schema.CACHE_POLICY: CACHE_POLICY, **slot, **status_tags,
        schema.CHECKS: verdicts.summary([verdicts.Check(name, text.startswith("pass"), text[6:])
                                         for name, text in checks.items()]),
    }
    tags, facts = schema.split_facts(tags)  # as a pass logs them: its facts are params
    return ([Metric(k, float(v), when_ms, 0) for k, v in metrics.items()],
            [Param(k, v) for k, v in {**shape.params[variant], **facts}.items()],
            [RunTag(k, v) for k, v in tags.items()])


def _plan(rng: random.Random, n: int, variants) -> list[dict]:
    """Campaigns alternating devices: rounds of every allowed variant in shuffled order, 5 rounds each."""
    passes, campaign = [], 0
    while len(passes) < n:
        device = list(DEVICES)[campaign % len(DEVICES)]
        campaign_id = uuid.UUID(int=rng.getrandbits(128)).hex[:11]
        allowed = [v for v in variants if not (variants[v].settings.device == "cpu" and DEVICES[device][0] != "cpu")]
        index = 0
        for round_ in range(1, PASSES_PER_VARIANT + 1):
            order = allowed[:]
            rng.shuffle(order)
            for position, variant in enumerate(order, 1):
                attempt = 1
                while len(passes) < n:
                    roll = rng.random()
                    outcome = "failed" if roll < 0.05 else "rejected" if roll < 0.08 else "accepted"
                    index += 1
                    passes.append({"campaign": campaign, "campaign_id": campaign_id, "device": device,
                                   "variant": variant, "outcome": outcome, "round": round_, "position": position,
                                   "attempt": attempt, "pass_index": index})
                    if outcome != "failed" or attempt == 2:
                        break
                    attempt += 1
        campaign += 1
    return passes


def populate(uri: str, n: int, protocol, variants, seed: int = 0) -> tuple[str, int]:
    """Create the experiment and its n pass runs (plus one parent run per campaign); returns (id, campaign runs)."""
    rng = random.Random(seed)
    client = MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment(EXPERIMENT)
    experiments.lock(client, experiment_id, EXPERIMENT, protocol, PROTOCOL.read_text(encoding="utf-8"))
    shape = Shape(rng, protocol, variants)
    plan = _plan(rng, n, variants)
    parents: dict[int, str] = {}
    jobs = []
    for number, item in enumerate(plan):
        when = START_MS + number * 20_000
        if item["campaign"] not in parents:
            run = client.create_run(experiment_id, start_time=when - 1_000, run_name=f"campaign {item['campaign_id']}",
                                    tags={schema.ROLE: schema.CAMPAIGN_ROLE, schema.CAMPAIGN_ID: item["campaign_id"]})
            parents[item["campaign"]] = run.info.run_id
        slot = {schema.CAMPAIGN_ID: item["campaign_id"], schema.PASS_INDEX: str(item["pass_index"]),
                schema.ROUND: str(item["round"]), schema.POSITION: str(item["position"]),
                schema.SLOT: f"{item['round']}-{item['position']}", schema.ATTEMPT: str(item["attempt"])}
        payload = _pass_payload(rng, shape, item["device"], item["variant"], item["outcome"], slot, when + 15_000)
        jobs.append((parents[item["campaign"]], item, when, payload))

    for parent, item, when, (metrics, params, tags) in jobs:
        run = client.create_run(experiment_id, start_time=when, run_name=item["variant"],
                                tags={"mlflow.parentRunId": parent})
        client.log_batch(run.info.run_id, metrics=metrics, params=params, tags=tags)
        client.set_terminated(run.info.run_id, "FAILED" if item["outcome"] == "failed" else "FINISHED",
                              end_time=when + 16_000)
    for run_id in parents.values():
        client.set_terminated(run_id, "FINISHED")
    return experiment_id, len(parents)


def shaped_variants() -> dict:
    """The shipped classification variants this store is shaped after (SPEED names them): the file also ships
    embeddings, generation and user-code variants, whose passes log other metrics."""
    return {name: variant for name, variant in load_variants(VARIANTS).items() if name in SPEED}


class _Timeout(Exception):
    pass


def _timed(fn, limit: float | None = None) -> float | None:
    """Seconds fn took, or None when it ran past limit (stopped with SIGALRM)."""
    if limit:
        def stop(signum, frame):
            raise _Timeout
        previous = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, limit)
    started = time.perf_counter()
    try:
        fn()
    except _Timeout:
        return None
    finally:
        if limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return time.perf_counter() - started


def measure(experiment_id: str, protocol, catalog, variants, repeats: int, report_timeout: float) -> dict:
    times: dict[str, list] = {"search_runs": [], "attempts": [], "report": []}
    rows = {}
    report_stopped = False
    client = MlflowClient()
    found = experiments.named(client, EXPERIMENT)
    for _ in range(repeats):
        times["search_runs"].append(_timed(lambda: rows.update(search=len(mlflow.search_runs(experiment_ids=[experiment_id])))))
        times["attempts"].append(_timed(lambda: rows.update(attempts=len(frame(reader.attempts(client, found))))))
        if not report_stopped:
            took = _timed(lambda: build(evidence.read(client, found), protocol, PROTOCOL, catalog, variants),
                          report_timeout)
            report_stopped = took is None
            times["report"].append(took)
    median = {key: statistics.median(values) if values and None not in values else None for key, values in times.items()}
    return {"times": times, "median": median, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000", help="comma-separated numbers of pass runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--report-timeout", type=float, default=120.0,
                        help="seconds after which one build() is stopped and reported as '> T'")
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None,
                        help="where the temporary stores go (default /dev/shm when writable)")
    parser.add_argument("--keep", action="store_true", help="keep the stores (their paths are printed)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    protocol = load_protocol(PROTOCOL)
    catalog = load_catalog(CATALOG)
    variants = shaped_variants()
    print(f"mlflow {mlflow.__version__}, python {sys.version.split()[0]}, repeats {args.repeats} (median), "
          f"report timeout {args.report_timeout:.0f} s", flush=True)
    results = []
    for n in sizes:
        tmp = tempfile.mkdtemp(prefix=f"report-scaling-{n}-", dir=args.dir)
        uri = f"sqlite:///{tmp}/mlflow.db"
        started = time.perf_counter()
        experiment_id, campaigns = populate(uri, n, protocol, variants)
        build_s = time.perf_counter() - started
        mlflow.set_tracking_uri(uri)
        result = measure(experiment_id, protocol, catalog, variants, args.repeats, args.report_timeout)
        result.update(n=n, campaigns=campaigns, populate_s=build_s, uri=uri)
        results.append(result)
        raw = "; ".join(f"{k} " + " ".join("timeout" if v is None else f"{v:.3f}" for v in vs)
                        for k, vs in result["times"].items())
        print(f"  {n} pass runs (+{campaigns} campaign runs) written in {build_s:.1f} s to {uri}; "
              f"rows: {result['rows']}; raw s: {raw}", flush=True)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    timeout = f"> {args.report_timeout:.0f}"

    def seconds(value):
        return timeout if value is None else f"{value:.3f}"

    def ratio(value, base):
        return "n/a" if value is None else f"{value / base:.3f}"

    def per_run(value, n):
        return "n/a" if value is None else f"{1000 * value / n:.3f}"

    header = ["runs", "search_runs_s", "attempts_s", "report_s", "report_s/search_runs_s",
              "attempts_s/search_runs_s", "search_runs_ms/run", "attempts_ms/run", "report_ms/run"]
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for r in results:
        m, n = r["median"], r["n"]
        cells = [f"{n:,}", seconds(m["search_runs"]), seconds(m["attempts"]), seconds(m["report"]),
                 ratio(m["report"], m["search_runs"]), ratio(m["attempts"], m["search_runs"]),
                 per_run(m["search_runs"], n), per_run(m["attempts"], n), per_run(m["report"], n)]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
