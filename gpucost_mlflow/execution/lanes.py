"""A lanes pass: one child per lane at once, each on its own device and corpus slice, released together into their
measured passes; their outcomes and deliverable files merged into the pass's (core/measurement/lanes.py says how).

On CUDA (and ROCm, through the same variable) lane k sees only the k-th visible GPU (`CUDA_VISIBLE_DEVICES`), so
each child's code is the one-device code. On the CPU every lane runs on the CPU. Either way the lanes share the
host's cores: each child gets an equal share of the launcher's torch threads (OMP, MKL and the tokenizer's rayon
pool), so the lanes do not oversubscribe the cores.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement import lanes as rules
from gpucost_mlflow.execution import child, gate, runner
from gpucost_mlflow.execution.outcome import BoardFacts, Counted, PassOutcome, Timings

READY_POLL_S = 0.02
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")



@dataclass(frozen=True)
class Layout:
    """Where each lane runs: its device as the launcher sees it, that device's name, what the child is shown of
    the GPUs, and the threads each lane gets."""

    devices: tuple[str, ...]
    device_names: tuple[str, ...]
    visible: tuple[str, ...]  # CUDA_VISIBLE_DEVICES of each lane ("" on the CPU)
    threads: int

    @property
    def count(self) -> int:
        return len(self.devices)

    def env(self, lane: int) -> dict[str, str]:
        """The variables a lane's child starts with."""
        env = dict.fromkeys(THREAD_VARIABLES, str(self.threads))
        if self.visible[lane]:
            env["CUDA_VISIBLE_DEVICES"] = self.visible[lane]
        return env


def layout(lanes: int, device) -> Layout:
    """The lanes of a pass on `device` (a torch.device): N GPUs, or the CPU N times; refuses more lanes than GPUs."""
    import torch

    from gpucost_mlflow.execution import devices  # deferred: imports torch

    threads = max(1, torch.get_num_threads() // lanes)
    if device.type != "cuda":
        name = devices.cpu_name()
        return Layout(("cpu",) * lanes, (name,) * lanes, ("",) * lanes, threads)
    count = torch.cuda.device_count()
    if count < lanes:
        raise GpucostError(f"the variant runs {lanes} lanes, one GPU each, but torch sees {count} GPU(s)")
    shown = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    visible = tuple(shown[k] if k < len(shown) else str(k) for k in range(lanes))
    return Layout(tuple(f"cuda:{k}" for k in range(lanes)), tuple(torch.cuda.get_device_name(k) for k in range(lanes)),
                  visible, threads)


def clock_name() -> str:
    """The clock the lanes' reads come from, as the platform names it (the span needs one clock for all processes)."""
    info = time.get_clock_info("perf_counter")
    return (f"time.perf_counter_ns ({info.implementation}, monotonic={info.monotonic}): on Linux one system-wide "
            "clock, so reads of different processes compare")


def manifest_record(rows: list[dict], plan: Layout) -> dict:
    """The manifest's `lanes` section for this corpus and layout (core/measurement/lanes.py)."""
    return rules.record(rules.slices(rows, plan.count), plan.devices, plan.device_names, plan.threads, clock_name())


def run_pass(spec: runner.PassSpec, rows: list[dict], plan: Layout, workdir: Path) -> tuple[PassOutcome, bool]:
    """The pass over its lanes: each slice written, every lane run on it, the lanes merged into the pass's outcome
    and files in `workdir`; returns the outcome and whether the launcher was interrupted."""
    paths = write_slices(rules.slices(rows, plan.count), workdir)
    specs = [replace(spec, corpus_path=str(path), workdir=str(path.parent), gate=True) for path in paths]
    outcomes, interrupted = run(specs, plan)
    return merge(outcomes, workdir, interrupted), interrupted


def folder(workdir: Path, lane: int) -> Path:
    return workdir / rules.FOLDER.format(lane)


def write_slices(parts: list[list[dict]], workdir: Path) -> list[Path]:
    """Each lane's corpus slice as a JSON-lines file in its own folder; returns the files."""
    paths = []
    for lane, rows in enumerate(parts):
        path = folder(workdir, lane) / "corpus.jsonl"
        path.parent.mkdir()
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        paths.append(path)
    return paths


def run(specs: list[runner.PassSpec], plan: Layout) -> tuple[list[PassOutcome], bool]:
    """Start every lane, release them together once each is ready (or ended), wait for all; returns each lane's
    outcome and whether the launcher was interrupted."""
    children = [child.start(spec, Path(spec.workdir), plan.env(lane)) for lane, spec in enumerate(specs)]
    try:
        _release_together(children, [Path(spec.workdir) for spec in specs])
    except KeyboardInterrupt:
        codes, interrupted = child.stop(children), True
    else:
        codes, interrupted = child.wait(children)
    return [child.read_outcome(Path(spec.workdir), code, interrupted) for spec, code in zip(specs, codes)], interrupted


def _release_together(children: list[child.Child], workdirs: list[Path]) -> None:
    """Wait until every lane is ready for its measured pass or has ended, then give every waiting lane its go."""
    waiting = set(range(len(children)))
    while waiting:
        waiting = {k for k in waiting if children[k].poll() is None and not gate.is_ready(workdirs[k])}
        if waiting:
            time.sleep(READY_POLL_S)
    for process in children:
        _go(process)


def _go(process: child.Child) -> None:
    try:
        process.stdin.write(b"g")
        process.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the lane ended before its go: its outcome says how


def merge(outcomes: list[PassOutcome], workdir: Path, interrupted: bool) -> PassOutcome:
    """The pass's outcome from its lanes', and its deliverable files from theirs (their time added to export_s)."""
    merge_started = time.perf_counter_ns()
    merge_files([folder(workdir, lane) for lane in range(len(outcomes))], workdir)
    merge_s = (time.perf_counter_ns() - merge_started) / 1e9
    completed = all(o.completed for o in outcomes)
    times, counted = [o.timings for o in outcomes], [o.measured for o in outcomes]
    bounds = [(t.clock_started_ns, t.clock_stopped_ns) for t in times]
    pass_s = rules.span_s(bounds) if completed else None
    metrics, missing = rules.combine_metrics([m.metrics for m in counted], [m.missing_measurements for m in counted],
                                             pass_s)
    merged = PassOutcome(
        status=Status.COMPLETED if completed else Status.FAILED,
        device=", ".join(dict.fromkeys(o.device for o in outcomes if o.device)),
        tokenizer_parallelism=outcomes[0].tokenizer_parallelism,
        deterministic=outcomes[0].deterministic,
        timings=Timings(
            load_s=_largest(t.load_s for t in times),
            warmup_s=_largest(t.warmup_s for t in times),
            pass_s=pass_s,
            export_s=_largest(t.export_s for t in times),
            measured_from_epoch_s=_smallest(t.measured_from_epoch_s for t in times),
            measured_until_epoch_s=_largest(t.measured_until_epoch_s for t in times),
            clock_started_ns=_smallest(start for start, _ in bounds),
            clock_stopped_ns=_largest(stop for _, stop in bounds)),
        measured=Counted(
            memory_peaks=rules.largest([m.memory_peaks for m in counted]),
            memory_counter=counted[0].memory_counter,
            metrics=metrics,
            missing_measurements=missing,
            tags=rules.combine_tags([m.tags for m in counted]),
            peak=counted[0].peak),
        board=BoardFacts({**outcomes[0].board.facts, "lanes": [o.board.facts for o in outcomes]}),
        stack=outcomes[0].stack,
        error="".join(f"lane {k}:\n{o.error}\n" for k, o in enumerate(outcomes) if o.error),
        lanes=[_lane_record(k, o) for k, o in enumerate(outcomes)],
    )
    if merged.timings.export_s is not None:
        merged.timed(export_s=merged.timings.export_s + merge_s)
    _completed_entries(merged, outcomes)
    if not completed:
        failed = [(k, o.reason) for k, o in enumerate(outcomes) if not o.completed]
        merged.reason = str(Status.INTERRUPTED) if interrupted else rules.failure_reason(failed, len(outcomes))
        merged.timed(elapsed_until_failure_s=_until_failure(outcomes))
    return merged


def _completed_entries(merged: PassOutcome, outcomes: list[PassOutcome]) -> None:
    """The sum of the lanes' completed entries; unknown when a lane's count is, with that lane's reason."""
    unknown = [(k, o.measured.completed_entries_reason or o.reason) for k, o in enumerate(outcomes)
               if o.measured.completed_entries is None]
    if unknown:
        merged.counted(completed_entries=None, completed_entries_reason=rules.lane_reasons(unknown, len(outcomes)))
    else:
        merged.counted(completed_entries=sum(o.measured.completed_entries for o in outcomes))


def _until_failure(outcomes: list[PassOutcome]) -> float | None:
    """Seconds from the first lane's clock start to the first failed lane's clock stop, when both were read."""
    started = _smallest(o.timings.clock_started_ns for o in outcomes)
    stopped = _smallest(o.timings.clock_stopped_ns for o in outcomes if not o.completed)
    if started is None or stopped is None:
        return None
    return (stopped - started) / 1e9


def _lane_record(lane: int, outcome: PassOutcome) -> dict:
    """What the verdict keeps of one lane: its status, counts, clock reads, stage times, memory and metrics."""
    measured = asdict(outcome.measured)
    measured.pop("peak")
    return {"lane": lane, "status": outcome.status, "reason": outcome.reason, "device": outcome.device,
            "tokenizer_parallelism": outcome.tokenizer_parallelism, **asdict(outcome.timings), **measured}


def _largest(values) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def _smallest(values) -> float | None:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def merge_files(folders: list[Path], workdir: Path) -> None:
    """The lanes' deliverables as one set in the pass's folder, lane after lane, each output by its own rules
    (`workloads/<kind>/output.py`). A lane that wrote none (it died) adds nothing; the verdict then finds its ids
    missing."""
    for name in registry.output_names():
        registry.output(name).merge(folders, workdir)
