"""Batch sizes sized for the device: the series a GPU is measured at, and the next size a starved pass is worth.

At batch 8 a GPU sits mostly idle (15-18 % utilisation on an H200, 2026-12-04): every pass was starved, so its
timings say more about launching kernels than about the device. The series doubles the batch from 8 until a
measured pass is no longer starved (its device busy at least the protocol's `min_utilisation`), or until the memory
estimate says the next size will not fit, or until a batch would hold the whole corpus. A size not yet measured
cannot be called starved or not, so it is proposed and the campaign measures it.

Pure arithmetic on plain data: the measured utilisation per batch size (if any), the memory estimate per size
(`gpucost memory estimate`, workloads/encoder_memory.py, computed by the caller), the device's memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

START = 8  # the series' first size: the shipped reference's batch
# the shipped variant at that size; the series' others are batch16, batch32, ... (variants.yaml)
START_VARIANT = "batch8"
FIT_MARGIN = 0.15  # within 15 % of the device's memory an estimate cannot tell (workloads/encoder_memory.TOO_CLOSE)


def fits(estimate_bytes: float | None, device_bytes: float | None, margin: float = FIT_MARGIN) -> bool | None:
    """Whether an estimate fits the device with the margin to spare: True, False, or None when either is unknown.
    An estimate within the margin of the device's memory does not fit here: the series never proposes a guess."""
    if estimate_bytes is None or device_bytes is None:
        return None
    return estimate_bytes <= (1 - margin) * device_bytes


def _gib(value: float) -> str:
    return f"{value / 2**30:.2f} GiB"


@dataclass(frozen=True)
class BatchSeries:
    """The proposed batch sizes, smallest first, and why the series stops where it does."""

    sizes: tuple[int, ...]
    stopped: str

    def line(self) -> str:
        """'batch sizes 8, 16, 32: batch 32 is not starved (62 % busy, limit 50 %)'."""
        return f"batch sizes {', '.join(str(size) for size in self.sizes)}: {self.stopped}"


def propose(device_bytes: float | None, estimates: Mapping[int, float], utilisation: Mapping[int, float] | None = None,
            min_utilisation: float = 0.5, largest: int | None = None, start: int = START) -> BatchSeries:
    """Double from `start` while the last size is starved or unmeasured, the next size's memory estimate fits the
    device and the next size is at most `largest` (the corpus: a larger batch is the same single batch)."""
    utilisation = utilisation or {}
    sizes = [start]
    while True:
        last, following = sizes[-1], 2 * sizes[-1]
        busy = utilisation.get(last)
        if busy is not None and busy >= min_utilisation:
            stopped = f"batch {last} is not starved ({100 * busy:.0f} % busy, limit {100 * min_utilisation:g} %)"
            break
        if largest is not None and following > largest:
            stopped = f"batch {following} would exceed the corpus's {largest} inputs"
            break
        fit = fits(estimates.get(following), device_bytes)
        if fit is None:
            unknown = "the device's memory" if device_bytes is None else f"batch {following}'s memory estimate"
            stopped = f"{unknown} is unknown: a larger batch is not proposed blind"
            break
        if not fit:
            stopped = (f"batch {following} will not fit: {_gib(estimates[following])} estimated, more than "
                       f"{100 * (1 - FIT_MARGIN):g} % of the device's {_gib(device_bytes)}")
            break
        sizes.append(following)
    return BatchSeries(tuple(sizes), stopped)


@dataclass(frozen=True)
class NextBatch:
    """The next batch size worth trying after a starved configuration, or why it is not worth trying."""

    size: int
    fits: bool | None  # False: the estimate says it will not fit; None: the device's memory is unknown
    estimate_bytes: float | None = None
    device_bytes: float | None = None
    basis: str = ""  # what the estimate rests on ('twice the measured peak')

    def text(self) -> str:
        """'next batch size worth trying: 16', or 'next batch size 16 will not fit: ...' when the estimate says so."""
        if self.fits is False:
            basis = f" ({self.basis})" if self.basis else ""
            return (f"next batch size {self.size} will not fit: {_gib(self.estimate_bytes)} estimated{basis} for the "
                    f"device's {_gib(self.device_bytes)}")
        return f"next batch size worth trying: {self.size}"


def next_batch(batch: int, estimate_bytes: float | None, device_bytes: float | None, basis: str = "") -> NextBatch:
    """The size after a starved pass's batch: double it, unless its memory estimate says it will not fit."""
    following = 2 * batch
    return NextBatch(following, fits(estimate_bytes, device_bytes), estimate_bytes, device_bytes, basis)
