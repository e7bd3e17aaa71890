"""The pre-registered second stage (PROTOCOL.md §6: "add repetitions under one protocol"): how many more passes the
undecided configurations get, each the same, up to what the separation test's estimate asks and never beyond the
protocol's `settle.max_passes_per_variant`. The decision is read once, when the stage has run, never round by round.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.measurement.stats import NOT_BY_PASSES, repetitions_needed
from gpucost_mlflow.core.records import Record

STAGE = "settle"  # the campaign stage tag of a second stage's campaign and passes


def looks(ceiling: int | None, staged: bool = False) -> int:
    """The looks at the data the protocol's confidence is shared over: two when it pre-registers a second stage
    (`settle`: the first look, made knowing a second may follow, spends its half too) or one has run, else one."""
    return 2 if ceiling is not None or staged else 1


@dataclass(frozen=True)
class SecondStage:
    """The variants to run again, how many more passes each, and the figures behind that count."""

    variants: tuple[str, ...]
    more: int  # passes per variant this stage adds: rounds of the rotated schedule (0: nothing to run, see `why`)
    target: int  # passes per configuration once it has run
    needed: int | None  # the separation test's estimate
    ceiling: int  # settle.max_passes_per_variant
    why: str = ""  # why more passes cannot help, when more is 0

    def line(self) -> str:
        if not self.more:
            return f"nothing to settle: {self.why}; nothing run"
        capped = f", capped by the protocol's {self.ceiling}" if self.needed > self.ceiling else ""
        return (f"second stage: {self.more} more pass(es) each of {', '.join(self.variants)}, to {self.target} per "
                f"configuration (the separation test's estimate {self.needed}{capped}); the decision is read once, "
                "when the stage has run")


def second_stage(undecided: Sequence[tuple[str, Sequence[float]]], ceiling: int | None,
                 confidence: float) -> SecondStage:
    """The stage for the undecided configurations, each (variant, its durations so far): the most passes any pair
    needs, within the ceiling (none, with why, when more passes cannot help); a one-line error when the protocol
    declares no second stage."""
    names = [name for name, _ in undecided]
    if ceiling is None:
        raise GpucostError("the protocol declares no second stage (settle: {max_passes_per_variant: N}, part of its "
                           "locked digest): more passes under it would be peeking; declare it in a new protocol and "
                           "experiment")
    if len(set(names)) != len(names):
        raise GpucostError(f"the undecided configurations share a variant name ({', '.join(names)}): they differ in "
                           "device or stack, and one campaign on this machine cannot run each of them")
    first = undecided[0][1]
    estimates = [repetitions_needed(first, other, confidence) for _, other in undecided[1:]]
    done = max(len(durations) for _, durations in undecided)
    if not any(estimates):
        why = f"no median difference between {', '.join(names)}: more passes are unlikely to separate them"
        return SecondStage(tuple(names), 0, done, None, ceiling, why)
    needed = max(e for e in estimates if e)
    target = min(needed, ceiling)
    if target <= done:
        return SecondStage(tuple(names), 0, done, needed, ceiling,
                           f"{', '.join(names)} already have {done} passes, the most the protocol's "
                           f"settle.max_passes_per_variant ({ceiling}) allows or the estimate ({needed}) asks")
    return SecondStage(tuple(names), target - done, target, needed, ceiling)


@dataclass(frozen=True)
class DeviceShare(Record):
    """What one device runs in a stage: its undecided variants and how many more passes each."""

    device: str
    variants: tuple[str, ...]
    more: int


@dataclass(frozen=True)
class StagePlan(Record):
    """A second stage fixed once, over every device of the undecided group: the passes per configuration it runs to,
    and each device's share. Recorded on each of its passes, so the report knows which device has not reported."""

    target: int
    shares: tuple[DeviceShare, ...]

    RENAMED: ClassVar[dict[str, str]] = {"shares": "devices"}

    def share(self, device: str) -> DeviceShare | None:
        return next((s for s in self.shares if s.device == device), None)

    def tag(self) -> str:
        """The plan as the JSON a tag holds."""
        return json.dumps(self.record())

    @classmethod
    def from_record(cls, record: Mapping | str) -> StagePlan:
        """The plan back from its record, or from the JSON its tag holds."""
        return super().from_record(json.loads(record) if isinstance(record, str) else record)


@dataclass(frozen=True)
class Member:
    """One undecided configuration as the stage sees it: its device, its variant and its durations so far."""

    device: str
    variant: str
    durations: tuple[float, ...]
    too_short: str = ""  # its durations were measured under the floor (core/measurement/stats.py `too_short`)


def plan_stage(group: Sequence[Member], ceiling: int | None, confidence: float) -> tuple[SecondStage, StagePlan | None]:
    """The stage for an undecided group that may span devices: one target for every configuration (the separation
    test's estimate within the ceiling, as `second_stage`), and per device its variants and the passes that bring them
    to the target (None when nothing is to run). A device whose configurations share a variant name (they differ in
    stack) is refused in one line: one campaign on it cannot run each of them."""
    devices = list(dict.fromkeys(m.device for m in group))
    for device in devices:
        names = [m.variant for m in group if m.device == device]
        if len(set(names)) != len(names):
            raise GpucostError(f"the undecided configurations on {device} share a variant name ({', '.join(names)}): "
                               "they differ in stack, and one campaign on that machine cannot run each of them")
    label = (lambda m: m.variant) if len(devices) == 1 else (lambda m: f"{m.variant} on {m.device}")
    stage = second_stage([(label(m), m.durations) for m in group], ceiling, confidence)
    untimed = [f"{label(m)} {m.too_short}" for m in group if m.too_short]
    if untimed and stage.more:
        done = max(len(m.durations) for m in group)
        return SecondStage(stage.variants, 0, done, stage.needed, ceiling,
                           f"{', '.join(untimed)}: {NOT_BY_PASSES}"), None
    if not stage.more:
        return stage, None
    shares = []
    for device in devices:
        mine = [m for m in group if m.device == device]
        more = stage.target - max(len(m.durations) for m in mine)
        shares.append(DeviceShare(device, tuple(m.variant for m in mine), max(more, 0)))
    return stage, StagePlan(stage.target, tuple(shares))


@dataclass(frozen=True)
class Progress:
    """Where one configuration of a stage stands: its counted passes, whether one is still running, whether one failed
    or was rejected (it cannot be chosen whatever more passes show: its share is over)."""

    counted: int
    running: bool = False
    out: bool = False


def unreported(plan: StagePlan, progress: Mapping[tuple[str, str], Progress]) -> list[str]:
    """The devices of the stage that have not reported (`progress`: per (device, variant)): a share has reported when
    none of its passes is still running and each of its variants has the stage's passes counted, or is out (failed or
    rejected); otherwise its stage is still running there, or its machine was lost."""
    def done(found: Progress | None) -> bool:
        return found is not None and not found.running and (found.counted >= plan.target or found.out)

    return [s.device for s in plan.shares if not all(done(progress.get((s.device, v))) for v in s.variants)]


@dataclass(frozen=True)
class FinishedVariant:
    """A variant a finished campaign of the experiment ran benchmark passes of, on one device."""

    variant: str
    device: str
    campaign_id: str


def pooled(devices: Mapping[str, str], measured: Sequence[FinishedVariant]) -> list[FinishedVariant]:
    """What a new ordinary campaign over these variants (each with the device its passes would record here) would pool
    its passes with: the same variant on the same device in a finished campaign. Another device's campaign over the
    same variants (a fleet's) measures other configurations and pools with nothing."""
    return [m for m in measured if devices.get(m.variant) == m.device]


def refuse_pooling(found: Sequence[FinishedVariant], experiment: str, files: tuple[Path, Path],
                   ceiling: int | None) -> None:
    """Refuse, in one line, a second ordinary campaign over configurations a finished campaign already measured: its
    passes would be pooled with theirs, a look at the data the protocol did not pre-register (PROTOCOL.md §6: add
    repetitions under one protocol); the protocol's second stage (`files`: its protocol and variants file) is the way
    to more passes."""
    if not found:
        return
    variants = list(dict.fromkeys(m.variant for m in found))
    devices = ", ".join(dict.fromkeys(m.device for m in found))
    campaigns = ", ".join(dict.fromkeys(m.campaign_id for m in found))
    protocol_path, variants_path = files
    settles = " ".join(["gpucost campaign --settle --experiment", shlex.quote(experiment), "--protocol",
                        shlex.quote(str(protocol_path)), "--variants-file", shlex.quote(str(variants_path)),
                        "--catalog CATALOG"])
    none = ("; this protocol declares none: settle: {max_passes_per_variant: N} in a new protocol and experiment"
            if ceiling is None else "")
    raise GpucostError(f"{', '.join(variants)} on {devices} already ha{'s' if len(variants) == 1 else 've'} the "
                       f"benchmark passes of finished campaign {campaigns} in experiment '{experiment}': another "
                       "campaign would pool its passes with theirs, a look at the data the protocol did not "
                       f"pre-register; more passes are the protocol's second stage, `{settles}` (when the decision "
                       f"over CATALOG is undecided{none}); a campaign of new variants only, or a new experiment, runs; "
                       "nothing recorded")
