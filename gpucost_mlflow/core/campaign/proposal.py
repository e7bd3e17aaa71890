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
}


@dataclass(frozen=True)
class Change:
    """What one second-series member changed against the reference, and whether it was accepted."""

    variant: str
    settings: dict
    accepted: bool
    why: str = ""
    against_reference: bool = True  # its accepted passes were compared with the reference pass


@dataclass(frozen=True)
class Proposal:
    series: str
    reference: str
    fields: tuple[str, ...]
    variants: dict[str, dict]  # name -> settings that differ from the defaults of the reference
    combined: tuple[str, ...]  # the accepted changes combined (variant names)
    left_out: dict[str, str]  # change -> why it is not combined


def _settings(variant: Variant) -> dict:
    """A variant's settings with its engine named even when it is torch (settings() leaves torch out)."""
    return {**variant.settings(), "engine": variant.engine}


def changes_of(reference: Variant, member: Variant) -> dict:
    """The settings a member changes against the reference."""
    base, mine = _settings(reference), _settings(member)
    return {key: value for key, value in mine.items() if base[key] != value}


def _refusal(settings: dict) -> str:
    """Why the settings' engine cannot run them ('' when it can)."""
    try:
        registry.check_engine(settings["engine"], registry.of_settings(settings).name, settings, "proposed")
    except GpucostError as exc:
        return str(exc).removeprefix("proposed: ")
    return ""


def _name(settings: dict, reference: Variant) -> str:
    base = _settings(reference)
    parts = [f"batch{settings['batch_size']}"]
    parts += [TAGS[key](value) for key, value in settings.items() if key != "batch_size" and base[key] != value]
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
        elif "batch_size" in change.settings:
            left_out[change.variant] = "changes the batch size (the sweep covers it)"
        elif set(change.settings) & set(WORK_FIELDS) and not change.against_reference:
            changed = ", ".join(sorted(set(change.settings) & set(WORK_FIELDS)))
            left_out[change.variant] = (f"changes the work ({changed}) and was accepted on the absolute bars alone, "
                                        "never compared with the reference")
        elif change.settings.get("precision") in slow:
            left_out[change.variant] = slow[change.settings["precision"]]
        elif any(set(change.settings) & set(other.settings) for other in usable):
            left_out[change.variant] = "changes a field another accepted change already changes"
        else:
            usable.append(change)
    if not usable:
        raise GpucostError("no accepted change to combine (" + "; ".join(f"{k}: {v}" for k, v in left_out.items())
                           + ")" if left_out else "no accepted change to combine")
    base = _settings(reference)
    proposed: dict[str, dict] = {}

    def offer(settings: dict) -> None:
        name = _name(settings, reference)
        refused = _refusal(settings)
        if refused:
            left_out.setdefault(name, refused)
        else:
            proposed.setdefault(name, settings)

    for size in range(2, len(usable) + 1):
        for group in combinations(usable, size):
            settings = dict(base)
            for change in group:
                settings.update(change.settings)
            offer(settings)
    best = dict(base)
    for change in usable:
        best.update(change.settings)
    for batch in sweep:
        settings = {**best, "batch_size": batch}
        if settings != base and not (len(usable) == 1 and batch == base["batch_size"]):
            offer(settings)
    if gpu:
        offers = [{"compile": True}] + ([{"precision": "fp16"}] if "fp16" not in slow else [])
        for extra in offers:
            settings = {**best, **extra}
            if settings != best:
                offer(settings)
    fields = tuple(sorted({key for settings in proposed.values() for key, value in settings.items() if base[key] != value}))
    return Proposal(series, reference.name, fields, proposed, tuple(c.variant for c in usable), left_out)
