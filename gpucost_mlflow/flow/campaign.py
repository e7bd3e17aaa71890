"""A campaign: the rotated schedule of passes under one protocol, a parent run with every pass nested.

Each pass runs through the same launcher as `gpucost pass`, its work in a fresh child process.
Resume re-runs only slots without an attempt and slots whose attempt was interrupted. Under a protocol's race, the
configurations it stops after a round run no further slot, this session or a resumed one.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.campaign.measuring import Measuring
from gpucost_mlflow.core.campaign.race import Stop
from gpucost_mlflow.core.campaign.schedule import Slot, SlotState, remaining, rotated
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.corpus import read_corpus
from gpucost_mlflow.core.inputs.protocol import Protocol, load_protocol
from gpucost_mlflow.core.inputs.variants import Declaration, Variant
from gpucost_mlflow.core.judging.seeds import DEFAULT_SEED
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement import lanes as lane_rules
from gpucost_mlflow.core.measurement.repetitions import timed_seconds
from gpucost_mlflow.core.money.catalog import Catalog
from gpucost_mlflow.core.money.measuring_price import Price
from gpucost_mlflow.core.names import PASS_S, STEADY_LAP_S
from gpucost_mlflow.execution import forkserver
from gpucost_mlflow.flow import opening
from gpucost_mlflow.flow.launcher import PassRequest, PassResult, execute
from gpucost_mlflow.flow.measuring import Clock, priced
from gpucost_mlflow.flow.preparation import Locked
from gpucost_mlflow.tracking import descriptions, experiments, schema, spool, store
from gpucost_mlflow.tracking.campaign_run import CampaignRun, experiment_of_run
from gpucost_mlflow.tracking.rejudge import Rejudged, rejudge


@dataclass
class CampaignPlan:
    """What to run and where: names resolved, inputs checked."""

    variants: list[str]
    passes: int
    experiment: str
    corpus_path: Path
    model_path: Path
    protocol_path: Path
    declared: Declaration  # the variants file, read once for the whole campaign
    code_root: Path
    resume: str = ""
    tags: dict[str, str] = field(default_factory=dict)  # on the campaign run and every pass (a fleet's ids)
    stage: str = ""  # "settle": the protocol's pre-registered second stage (core/campaign/settle.py)
    catalog: Catalog | None = None  # prices its machine time (flow/measuring.py), when given
    referee: Callable[[Look], list[Stop]] | None = None  # the protocol's race, asked after each round (cli/passes.py)


@dataclass(frozen=True)
class Look:
    """What the race is asked after a round: the experiment, the campaign and the round just run."""

    experiment: str
    campaign_id: str
    round: int


@dataclass
class Display:
    """Callbacks the terminal progress display hooks into; all optional."""

    on_plan: Callable[[str, int, int], None] = lambda campaign_id, total, todo: None
    on_pass_start: Callable[[Slot, int, Path | None], None] = lambda slot, batches, workdir: None
    on_child_start: Callable[[Path], None] = lambda workdir: None
    on_pass_end: Callable[[Slot, PassResult], None] = lambda slot, result: None
    on_stop: Callable[[Stop, int], None] = lambda stop, dropped: None  # a configuration stopped, its slots dropped


@dataclass
class CampaignResult:
    campaign_id: str
    parent_run_id: str
    results: list = field(default_factory=list)
    rejudged: list[Rejudged] = field(default_factory=list)  # pending passes judged once their reference passed
    skipped: dict[str, str] = field(default_factory=dict)  # variant -> why its slots were not tried
    stopped: dict[str, str] = field(default_factory=dict)  # variant -> the race's stop line (core/campaign/race.py)
    overhead_s_per_pass: float | None = None
    experiment_id: str = ""
    measuring: Measuring | None = None  # its machine time, every session (core/campaign/measuring.py)
    measuring_price: Price | None = None  # that time's cost at its device's offer, where a catalog was given


@dataclass
class Shown:
    """What the campaign run shows in the UI as passes finish: its description and its progress metrics."""

    campaign_id: str
    variants: list[str]
    passes: int
    protocol_digest: str
    latest: dict[str, dict] = field(default_factory=dict)  # slot key -> its latest attempt (variant, status, pass_s)

    def update(self, run: CampaignRun, state: str, result: CampaignResult | None = None) -> None:
        """Rewrite the campaign run's description and progress metrics (best effort: tracking/campaign_run.py)."""
        attempts = list(self.latest.values())
        aside = (descriptions.Aside(result.skipped, result.stopped, result.overhead_s_per_pass) if result
                 else descriptions.Aside())
        note = descriptions.campaign_note(self.campaign_id, self.variants, self.passes, attempts, state,
                                          self.protocol_digest, aside)
        run.show(note, descriptions.campaign_progress(attempts), len(attempts))


def run_campaign(plan: CampaignPlan, display: Display | None = None) -> CampaignResult:
    """Run (or resume) a campaign; a pass that fails stays its row and the campaign goes on. Under `child_imports:
    once` its starter starts first, so its imports run while the store and the campaign run are opened."""
    clock = Clock()
    parent_from_mlflow_run = os.environ.pop("MLFLOW_RUN_ID", None)
    protocol = load_protocol(plan.protocol_path)
    with contextlib.ExitStack() as starter:
        if protocol.child_imports == "once":
            starter.enter_context(forkserver.serving())  # imports timed once, each child forked from them
        return _run(plan, protocol, display or Display(), (clock, starter), parent_from_mlflow_run)


def _run(plan: CampaignPlan, protocol: Protocol, display: Display, session: tuple[Clock, contextlib.ExitStack],
         parent_from_mlflow_run: str | None) -> CampaignResult:
    """The campaign run opened or resumed, then each slot left to run, in order (`session`: this session's clock and
    the starter, closed once no pass is left to fork)."""
    clock, starter = session
    store.bound_http_retries()
    store.check()
    client = store.client()
    if parent_from_mlflow_run:
        experiment = experiment_of_run(client, parent_from_mlflow_run)
    else:
        experiment = experiments.resolve(client, plan.experiment, create=True)
    experiment_id, experiment_name = experiment.id, experiment.name
    # Resolved and locked once, protocol and series alike, before the campaign run opens: its passes carry it.
    locked = Locked(experiment_id, protocol, plan.protocol_path.read_text(encoding="utf-8"))
    if plan.resume:
        opened = opening.resume_run(client, experiment_name, plan, locked)
    else:
        opened = opening.open_run(client, experiment_name, plan, locked, parent_from_mlflow_run)

    slots = rotated(opened.variants, opened.passes, protocol.seeds)
    existing = opened.attempts_by_slot()
    todo = remaining(slots, existing)
    display.on_plan(opened.campaign_id, len(slots), len(todo))
    corpus_size = len(read_corpus(plan.corpus_path).rows)
    result = CampaignResult(opened.campaign_id, opened.run_id, experiment_id=experiment_id)
    shown = Shown(opened.campaign_id, opened.variants, opened.passes, protocol.digest,
                  {key: rows[-1] for key, rows in existing.items() if key and rows})
    shown.update(opened, "running")
    declared = plan.declared.variants
    started = time.time()
    result.stopped.update(_stopped(existing))
    last_runs, looked = _last_runs(existing), 0
    if not todo:
        starter.close()  # no pass left to fork
    try:
        for slot, state in todo:
            if slot.round - 1 > looked:
                looked = slot.round - 1
                _race(plan, opened, Look(experiment_name, opened.campaign_id, looked), result, display,
                      (last_runs, todo))
            if slot.variant in result.skipped or slot.variant in result.stopped:
                continue
            variant = plan.declared.variant(slot.variant)
            display.on_pass_start(slot, lane_rules.batches(corpus_size, variant.settings.batch_size,
                                                           variant.settings.lanes), None)
            try:
                outcome = clock.timed(execute, _request(plan, opened, experiment_name, slot, state, variant, display,
                                                        locked))
            except GpucostError as exc:
                raise _with_spool_hint(exc, opened.campaign_id, len(result.results), len(todo)) from None
            result.results.append((slot, outcome))
            last_runs[slot.variant] = outcome.run_id
            display.on_pass_end(slot, outcome)
            _record(protocol, experiment_name, opened, shown, result, slot, outcome)
            if outcome.status == Status.FAILED and outcome.reason.startswith("out of memory"):
                for larger in larger_batches(declared, variant, opened.variants):
                    result.skipped.setdefault(larger, f"{variant.name} ran out of memory at batch "
                                                      f"{variant.settings.batch_size}: larger batch sizes of its sweep "
                                                      "are not tried, no smaller one is substituted")
    except KeyboardInterrupt:
        shown.update(opened, "interrupted", result)
        _measured(plan, opened, result, clock)
        opened.end("KILLED")
        raise
    except BaseException:
        shown.update(opened, "stopped", result)
        _measured(plan, opened, result, clock)
        opened.end("FAILED")
        raise
    _measured(plan, opened, result, clock)
    _finish(opened, shown, result, time.time() - started)
    return result


def _request(plan: CampaignPlan, opened: CampaignRun, experiment_name: str, slot: Slot, state: SlotState,
             variant: Variant,
             display: Display, locked: Locked) -> PassRequest:
    """One slot's pass, nested under the campaign run and tagged with its place in the rotation."""
    tags = {schema.ROUND: slot.round, schema.POSITION: slot.position, schema.SLOT: slot.key,
            schema.ATTEMPT: state.attempts + 1, schema.CACHE_POLICY: opening.cache_policy(locked.protocol),
            **plan.tags}
    if state.retry_of:
        tags[schema.RETRY_OF] = state.retry_of
    return PassRequest(
        variant=variant,
        corpus_path=plan.corpus_path,
        model_path=plan.model_path,
        experiment=experiment_name,
        protocol_path=plan.protocol_path,
        declared=plan.declared,
        campaign_id=opened.campaign_id,
        pass_index=str(slot.index),
        code_root=plan.code_root,
        parent_run_id=opened.run_id,
        slot_tags=tags,
        on_child_start=display.on_child_start,
        seed=slot.seed if slot.seed is not None else DEFAULT_SEED,
        locked=locked,
    )


def _record(protocol: Protocol, experiment_name: str, run: CampaignRun, shown: Shown, result: CampaignResult,
            slot: Slot, outcome: PassResult) -> None:
    """Show a finished pass on the campaign run; an accepted reference pass first judges the pending ones again."""
    shown.latest[slot.key] = {"variant": slot.variant, "status": outcome.status, "run_id": outcome.run_id,
                              PASS_S: outcome.metrics.get(PASS_S), STEADY_LAP_S: outcome.metrics.get(STEADY_LAP_S)}
    if (slot.variant == protocol.acceptance.reference_variant and outcome.status == Status.ACCEPTED
            and not outcome.spooled):
        judged = rejudge(experiment_name, protocol, run.client)
        result.rejudged += judged
        statuses = {item.run_id: item.status for item in judged}
        for row in shown.latest.values():
            row["status"] = statuses.get(row.get("run_id"), row["status"])
    shown.update(run, "running")


def _stopped(existing: dict[str, list[dict]]) -> dict[str, str]:
    """The configurations the race stopped in the campaign's earlier sessions (a resume): variant -> why."""
    return {row["variant"]: row["stopped"] for rows in existing.values() for row in rows if row.get("stopped")}


def _last_runs(existing: dict[str, list[dict]]) -> dict[str, str]:
    """Each variant's latest pass in the campaign so far (its run id), the one a stop is recorded on."""
    rows = sorted((row for rows in existing.values() for row in rows),
                  key=lambda row: tuple(int(row.get(key) or 0) for key in ("round", "position", "attempt")))
    return {row["variant"]: row["run_id"] for row in rows}


def _race(plan: CampaignPlan, run: CampaignRun, look: Look, result: CampaignResult, display: Display,
          scheduled: tuple[dict[str, str], list[tuple[Slot, SlotState]]]) -> None:
    """After a round: the configurations the protocol's race stops, each recorded on its latest pass (`scheduled`:
    those passes' run ids, and the slots to run) and on the campaign run, and said with the slots it drops."""
    if plan.referee is None:
        return
    last_runs, todo = scheduled
    for stop in plan.referee(look):
        if stop.variant in result.stopped or stop.variant not in last_runs:
            continue
        result.stopped[stop.variant] = stop.line()
        run.record_stop(last_runs[stop.variant], stop.reason, result.stopped)
        display.on_stop(stop, sum(1 for slot, _ in todo if slot.variant == stop.variant and slot.round > look.round))


def _finish(run: CampaignRun, shown: Shown, result: CampaignResult, elapsed_s: float) -> None:
    """Close the campaign run: its harness overhead per pass, the variants not tried and why, its last description."""
    result.overhead_s_per_pass = harness_overhead(elapsed_s, [outcome.metrics for _, outcome in result.results])
    run.record_end(result.overhead_s_per_pass, result.skipped)
    shown.update(run, "finished", result)
    run.finish()


def _measured(plan: CampaignPlan, run: CampaignRun, result: CampaignResult, clock: Clock) -> None:
    """Record the campaign's machine time with this session's added, and its price where a catalog was given."""
    session = clock.session([outcome.metrics for _, outcome in result.results])
    total = run.before.plus(session)
    result.measuring_price = priced(total, plan.catalog, plan.declared, run.variants)
    result.measuring = run.record_measuring(session, result.measuring_price)


def harness_overhead(elapsed_s: float, metrics: list[dict]) -> float | None:
    """Seconds per pass the campaign spent outside the protocol's timed parts (load, warm-up, the measured clock,
    evaluation, export, the cooldown): process start, manifest, logging, reference download and the gaps between
    passes."""
    if not metrics:
        return None
    timed = sum(timed_seconds(m) for m in metrics)
    return max(0.0, elapsed_s - timed) / len(metrics)


def larger_batches(declared: dict[str, Variant], failed: Variant, scheduled: list[str]) -> list[str]:
    """The scheduled variants identical to one that ran out of memory but for a larger batch size (PROTOCOL.md §5)."""
    return [name for name in scheduled if name != failed.name
            and declared[name].settings.batch_size > failed.settings.batch_size
            and declared[name].settings.differing(failed.settings) == ["batch_size"]]


def _with_spool_hint(exc: GpucostError, campaign_id: str, done: int, todo: int) -> GpucostError:
    """A store lost mid-campaign stops it before the next pass; say what waits in the spool and how to go on."""
    waiting = spool.of_campaign(campaign_id)
    if not waiting:
        return exc
    return GpucostError(
        f"{exc} (stopped before pass {done + 1} of {todo}; {len(waiting)} finished pass(es) wait in the spool "
        f"{spool.spool_dir()}: when the store is back, run `gpucost sync`, then `gpucost campaign --resume "
        f"{campaign_id}`)"
    )
