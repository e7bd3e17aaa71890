"""A synthetic decision report with the widths a real campaign gives: three configurations with long names (one on
a device without a package), long repeated reasons, three figures, and one hostile variant name in the attempts."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd

from gpucost_mlflow.core.inputs.protocol_sections import PlanAssumptions
from gpucost_mlflow.core.measurement.stats import Durations, separate
from gpucost_mlflow.core.measurement.timeline import Span
from gpucost_mlflow.core.money.billing import HourlyTerms
from gpucost_mlflow.core.money.catalog import Package
from gpucost_mlflow.core.money.choice import choose
from gpucost_mlflow.core.money.decided import made
from gpucost_mlflow.core.money.decision import Assessment, Configuration
from gpucost_mlflow.core.money.forecast import forecast
from gpucost_mlflow.core.money.plans import covering_plans
from gpucost_mlflow.report import plots, render
from gpucost_mlflow.report.tables import Summary

HOSTILE = "<script>alert(1)</script>"
PEAK_REASON = ("no dense-matmul peak cached for this device and precision when the pass ran (run `gpucost doctor "
               "--peak`)")
COUNTER = "process peak RSS (getrusage ru_maxrss of the pass's child process, whole lifetime including load)"


def synthetic_report(passes_per_variant: int | None = 5, figures: bool = True) -> render.Report:
    """The report model; figures drawn only when asked (matplotlib takes a moment)."""
    device = "NVIDIA GeForce RTX 4090"
    fast = Configuration(device=device, variant="batch8-bf16-lengthgrouped", statuses=["accepted"] * 5,
                         durations=Durations((10.2, 10.5, 10.1, 10.4, 10.3)),
                         medians={"load_s": 2.0, "warmup_s": 1.0, "eval_s": 0.5, "export_s": 0.2},
                         accepted_deliverables=1, distinction="torch 2.13.0+cu128")
    slow = Configuration(device=device, variant="batch1", statuses=["accepted"] * 4 + ["failed"],
                         durations=Durations((30.5, 31.0, 29.8, 30.2)),
                         medians={"load_s": 2.1, "warmup_s": 1.1, "eval_s": 0.5, "export_s": 0.2})
    elsewhere = Configuration(device="NVIDIA H200 141GB HBM3e", variant="batch32-bf16-lengthgrouped",
                              statuses=["accepted"] * 5, durations=Durations((3.1, 3.2, 3.0, 3.3, 3.1)),
                              medians={"load_s": 2.0, "warmup_s": 1.0, "eval_s": 0.5, "export_s": 0.2})
    package = Package(provider="Example Cloud", catalog_version="2025-01", gpu="rtx-4090", device_names=(device,),
                      gpus_per_lot=1, days=7, price_per_lot=Decimal("120.00"), currency="EUR",
                      source="catalog/example.yaml", line=3)
    plan = {"setup_hours": 1.0, "waiting_hours": 2.0, "planned_restarts": 1, "start": dt.datetime(2025, 3, 1, 9)}
    outlook = forecast(plan, 1, fast.durations, fast.medians, tuple(Span(40.0 * i, 40.0 * (i + 1)) for i in range(9)))
    plans = covering_plans([package], Decimal(str(round(outlook.hours, 6))))
    unpriced = f"not priced: {elsewhere.device} has no package in 2025-01 (catalog/example.yaml)"
    assessments = [
        Assessment(fast, True, "5 of 5 attempts accepted", forecast=outlook,
                   forecast_end=dt.datetime(2025, 3, 2, 12, 30), deadline_status="met", meets_deadline=True,
                   plans=plans, priced=plans[0].describe(), cost_per_validated=Decimal("120.00")),
        Assessment(slow, False, "1 failed attempt(s) (did not complete the corpus)", priced="not priced: infeasible"),
        Assessment(elsewhere, True, "5 of 5 attempts accepted", forecast=outlook,
                   forecast_end=dt.datetime(2025, 3, 2, 12, 30), deadline_status="met", meets_deadline=True,
                   priced=unpriced),
    ]
    summaries = [
        Summary(fast, {"mem_peak_rss_bytes": 900 * 2**20}, COUNTER, 0.71, {"passed": 5}, mfu_reason=PEAK_REASON),
        Summary(slow, {"mem_peak_rss_bytes": 600 * 2**20}, COUNTER, 0.70, {"passed": 4, "(none: failed)": 1},
                mfu_reason=PEAK_REASON),
        Summary(elsewhere, {"mem_peak_allocated_bytes": 2100 * 2**20, "mem_peak_reserved_bytes": 2400 * 2**20},
                "torch.cuda.max_memory_allocated / max_memory_reserved (device 0, reset before the pass)", 0.71,
                {"failed: buckets, reference_agreement, reference_metric": 5},
                {"useful_flop_per_s": 4.1e13, "padded_flop_per_s": 9.2e13, "mfu_useful": 0.061, "mfu_padded": 0.137}),
    ]
    rows = []
    for config in (fast, slow, elsewhere):
        for index, status in enumerate(config.statuses):
            done = index < len(config.durations.values)
            rows.append({
                "pass_index": len(rows) + 1, "round": index + 1, "position": 1 + (fast, slow, elsewhere).index(config),
                "variant": config.variant, "device": config.device, "status": status,
                "pass_s": config.durations.values[index] if done else None,
                "quality_verdict": "passed" if done else "", "macro_f1": 0.71 if done else None,
                "expected_ids": 1000, "observed_ids": 1000 if done else 312, "ids_match": done, "corpus_accepted": done,
                "completed_entries": 1000 if done else 312,
                "reason": "every check passed" if done else "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
                                                             "23.65 GiB total capacity)",
                "mfu_useful": None, "mfu_padded": None,
                "mfu_reason": PEAK_REASON if done else "no completed pass (CUDA out of memory)",
                "overlapped_with": "", "run_id": f"{len(rows):032x}",
            })
    rows[-1]["variant"] = HOSTILE  # a string from a run must reach the page as text, never as markup
    rows[0]["overlapped_with"] = f"{1:032x},{2:032x}"
    attempts = pd.DataFrame(rows)
    assert set(render.ATTEMPT_COLUMNS) <= set(attempts.columns)
    decided = made(assessments, choose(assessments))
    return render.Report(
        experiment="browser-check", question="Which batch size validates the corpus cheapest before the deadline?",
        protocol_digest="0123456789abcdef" * 4, catalog="2025-01 (catalog/example.yaml)",
        decision="Decision: batch8-bf16-lengthgrouped [torch 2.13.0+cu128] on NVIDIA GeForce RTX 4090, 120.00 EUR "
                 "committed.", warnings=["A synthetic report built by the test."],
        attempts=attempts, summaries=summaries,
        separations=[("batch on NVIDIA GeForce RTX 4090", separate("batch8", fast.durations.values, "batch1",
                                                                   slow.durations.values))],
        decided=decided, deadline="2025-03-10T00:00:00", plan=PlanAssumptions.from_record(plan),
        figures=plots.for_report(summaries, decided) if figures else {},
        passes_per_variant=passes_per_variant, experiment_id="7",
    )


CPU = "Intel(R) Xeon(R) Processor"
DEMO_PASSES = {  # the demo's variants on one CPU, seconds per 1,000-input corpus (five passes each)
    "batch64-bf16-lengthgrouped": (5.6, 5.7, 5.5, 5.8, 5.6),
    "batch8-lengthgrouped": (7.4, 7.6, 7.5, 7.7, 7.5),
    "batch8-bf16": (9.0, 9.2, 9.1, 9.3, 12.4),
    "batch8": (11.0, 11.2, 11.1, 11.3, 11.0),
    "batch4": (15.2, 15.0, 15.4, 15.1, 15.3),
    "batch1": (40.1, 40.5, 39.8, 40.2, 40.0),
    "batch8-int8": (4.1, 4.2, 4.0, 4.1, 4.3),  # rejected: quality below the bar
    "batch16": (6.9,),  # under-sampled: one pass of five
}
DEMO_START = dt.datetime(2026, 10, 1, 9)


def decided_report(expected: int = 2000, deadline_h: float = 20.0, changed: dict | None = None,
                   priced_device: str = CPU, figures: bool = True) -> render.Report:
    """A report like the demo's: eight configurations on one CPU priced hourly at an example price, 2,000 corpora of
    1,000 inputs, a deadline the slowest misses; `changed`: other durations for some variants; `priced_device`: the
    device the catalog prices (another one: nothing priced)."""
    from gpucost_mlflow.core.money.catalog import Catalog
    from gpucost_mlflow.core.money.decision import Rules, assess
    from gpucost_mlflow.core.money.decision_note import decide

    passes = {**DEMO_PASSES, **(changed or {})}
    medians = {"load_s": 3.0, "warmup_s": 0.5, "eval_s": 0.1, "export_s": 0.2}
    spans = []  # every attempt on the device, one after another: each configuration's forecast counts them all
    for value in (v for values in passes.values() for v in values):
        start = spans[-1].end_s if spans else 0.0
        spans.append(Span(start, start + 4.0 + value, "host"))
    configs, number = [], 0
    for variant, values in passes.items():
        statuses = ["rejected"] * len(values) if variant == "batch8-int8" else ["accepted"] * len(values)
        runs = tuple(f"{number + i:08x}{'0' * 24}" for i in range(len(values)))
        number += len(values)
        configs.append(Configuration(device=CPU, variant=variant, statuses=statuses, durations=Durations(values),
                                     medians=medians, attempt_spans=tuple(spans), pass_runs=runs,
                                     pass_causes=("",) * len(values)))
    package = Package(provider="this machine", catalog_version="example", gpu="cpu", device_names=(priced_device,),
                      gpus_per_lot=1, days=None, price_per_lot=Decimal("0.50"), currency="USD",
                      source="example price: catalog/this-machine.csv", line=2, billing="hourly",
                      terms=HourlyTerms(min_hours=Decimal(1), increment_hours=Decimal(1)))
    catalog = Catalog("catalog/this-machine.csv", "example", "USD", (package,))
    plan = {"setup_hours": 4.0, "waiting_hours": 0.0, "planned_restarts": 0, "start": DEMO_START}
    deadline = DEMO_START + dt.timedelta(hours=deadline_h)
    assessments = assess(configs, Rules(catalog, plan, deadline, expected, required_passes=5, max_spread_ratio=1.5,
                                        inputs_per_deliverable=1000, today=DEMO_START.date()))
    choice = choose(assessments)
    decided = made(assessments, choice, decide(assessments, expected, 1000, choice=choice))
    summaries = [Summary(c, {"mem_peak_rss_bytes": 700 * 2**20}, COUNTER, 0.71, {"passed": len(c.statuses)})
                 for c in configs]
    rows = [{"pass_index": i + 1, "round": i + 1, "position": 1, "variant": c.variant, "device": c.device,
             "status": status, "reason": "every check passed", "pass_s": value, "quality_verdict": "passed",
             "macro_f1": 0.71, "expected_ids": 1000, "observed_ids": 1000, "ids_match": True, "corpus_accepted": True,
             "completed_entries": 1000, "mfu_useful": None, "mfu_padded": None, "mfu_reason": PEAK_REASON,
             "overlapped_with": "", "run_id": run}
            for c in configs for i, (status, value, run) in enumerate(zip(c.statuses, c.durations.values, c.pass_runs))]
    return render.Report(
        experiment="gpucost-demo", question="Which configuration validates 2,000 corpora of 1,000 inputs cheapest "
                                            "before the deadline?",
        protocol_digest="fedcba9876543210" * 4, catalog="example (catalog/this-machine.csv)",
        decision=decided.note, warnings=[], attempts=pd.DataFrame(rows),
        summaries=summaries, separations=[], decided=decided, deadline=deadline.isoformat(),
        plan=PlanAssumptions.from_record(plan),
        figures=plots.for_report(summaries, decided) if figures else {}, example_prices=True,
        passes_per_variant=5, experiment_id="3")
