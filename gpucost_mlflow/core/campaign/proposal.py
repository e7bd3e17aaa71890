"""The third series: the second series' accepted changes combined, and a batch-size sweep under the best one.

Written before any of its timings exist, from what a finished campaign accepted: a change that was
rejected (or failed) is never combined, nor one that changes the work (max_length) unless it was accepted against the
reference, and a precision the device does not run faster than fp32
(its cached dense-matmul peak below fp32's) is not proposed. An accepted engine (ONNX Runtime, CTranslate2) is one
more change to combine; a combination its engine cannot run (ONNX Runtime in bf16, say) is left out with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import Variant
from gpucost_mlflow.core.judging.verdicts import WORK_FIELDS
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.kinds.settings import Settings

SWEEP = (8, 16, 32, 64)
TAGS = {
    "precision": lambda v: v,
    "quantization": lambda v: "int8" if v == "dynamic-int8" else v,
    "length_grouping": lambda v: "lengthgrouped" if v == "sorted" else f"grouping-{v}",
    "attention": lambda v: v,
    "compile": lambda v: "compiled" if v else "eager",
    "max_length": lambda v: f"len{v}",
    "padding": lambda v: f"pad-{v}",
    "device": lambda v: v,
    "engine": lambda v: {"onnxruntime": "ort", "ctranslate2": "ct2"}.get(v, v),
    "sdpa_backend": lambda v: f"sdpa-{v}",
}


def _tag(key: str, value) -> str:
    """A changed setting in a proposed variant's name; a kind's own setting, which TAGS does not know, as key-value."""
    return TAGS[key](value) if key in TAGS else f"{key}-{value}"


@dataclass(frozen=True)
class Change:
    """What one second-series member changed against the reference, and whether it was accepted."""

    variant: str
    changes: dict  # setting -> the member's value, for the settings it changes
    accepted: bool
    why: str = ""
    against_reference: bool = True  # its accepted passes were compared with the reference pass


@dataclass(frozen=True)
class Proposal:
    series: str
    reference: str
    fields: tuple[str, ...]
    variants: dict[str, Settings]  # name -> its settings
    combined: tuple[str, ...]  # the accepted changes combined (variant names)
    left_out: dict[str, str]  # change -> why it is not combined


def changes_of(reference: Variant, member: Variant) -> dict:
    """The settings a member changes against the reference."""
    return {key: getattr(member.settings, key) for key in member.settings.differing(reference.settings)}


def _refusal(settings: Settings) -> str:
    """Why the settings' engine cannot run them ('' when it can)."""
    try:
        registry.check_engine(settings.engine, registry.of_settings(settings).name, settings, "proposed")
    except GpucostError as exc:
        return str(exc).removeprefix("proposed: ")
    return ""


def _name(settings: Settings, reference: Variant) -> str:
    parts = [f"batch{settings.batch_size}"]
    parts += [_tag(key, getattr(settings, key))
              for key in settings.differing(reference.settings) if key != "batch_size"]
    return "-".join(parts)


def propose(reference: Variant, changes: list[Change], series: str, slow_precisions: dict[str, str] | None = None,
            sweep: tuple[int, ...] = SWEEP, gpu: bool = False) -> Proposal:
    """Every combination (two or more) of the accepted, compatible changes, then a batch-size sweep under the
    combination of them all; on a GPU also that combination compiled, and in fp16 (unless fp16 is slow there).
    Raises GpucostError when no change was accepted."""
    slow = slow_precisions or {}
    left_out: dict[str, str] = {}
    usable: list[Change] = []
    for change in changes:
        if not change.accepted:
            left_out[change.variant] = f"not accepted ({change.why})" if change.why else "not accepted"
        elif "batch_size" in change.changes:
            left_out[change.variant] = "changes the batch size (the sweep covers it)"
        elif set(change.changes) & set(WORK_FIELDS) and not change.against_reference:
            changed = ", ".join(sorted(set(change.changes) & set(WORK_FIELDS)))
            left_out[change.variant] = (f"changes the work ({changed}) and was accepted on the absolute bars alone, "
                                        "never compared with the reference")
        elif change.changes.get("precision") in slow:
            left_out[change.variant] = slow[change.changes["precision"]]
        elif any(set(change.changes) & set(other.changes) for other in usable):
            left_out[change.variant] = "changes a field another accepted change already changes"
        else:
            usable.append(change)
    if not usable:
        raise GpucostError("no accepted change to combine (" + "; ".join(f"{k}: {v}" for k, v in left_out.items())
                           + ")" if left_out else "no accepted change to combine")
    base = reference.settings
    proposed: dict[str, Settings] = {}

    def offer(settings: Settings) -> None:
        name = _name(settings, reference)
        refused = _refusal(settings)
        if refused:
            left_out.setdefault(name, refused)
        else:
            proposed.setdefault(name, settings)

    for size in range(2, len(usable) + 1):
        for group in combinations(usable, size):
            offer(base.changed(**{k: v for change in group for k, v in change.changes.items()}))
    best = base.changed(**{k: v for change in usable for k, v in change.changes.items()})
    for batch in sweep:
        settings = best.changed(batch_size=batch)
        if settings != base and not (len(usable) == 1 and batch == base.batch_size):
            offer(settings)
    if gpu:
        offers = [{"compile": True}] + ([{"precision": "fp16"}] if "fp16" not in slow else [])
        for extra in offers:
            settings = best.changed(**extra)
            if settings != best:
                offer(settings)
    fields = tuple(sorted({key for settings in proposed.values() for key in settings.differing(base)}))
    return Proposal(series, reference.name, fields, proposed, tuple(c.variant for c in usable), left_out)
