"""A pass's forward FLOPs as every kind counts them, and the rates the pass records from them.

Counted: every matrix multiply, as 2 x multiply-accumulates; what is not a matrix multiply (softmax, norms,
activations, residual and bias adds, embedding lookups, argmax) is left out, as it weighs well under 1 %. Padding is
counted apart: *useful* FLOPs are those a sequence needs at its own length; *padded* FLOPs are what the batch makes
the device compute, every row at the batch's padded width (a mask hides padded positions but does not skip them).
Each kind counts its own model (an encoder: workloads/encoder_flops.py; a decoder: workloads/generation/
decoder_flops.py) into a `FlopCount`; `rates` turns it into the pass's metrics. Plain Python on plain data, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_mlflow.core.names import (
    MFU_PADDED,
    MFU_USEFUL,
    PADDED_FLOP_PER_S,
    PADDING_SHARE,
    PEAK_FLOP_PER_S,
    TOKENS_REAL,
    USEFUL_FLOP_PER_S,
)


@dataclass(frozen=True)
class FlopCount:
    """Useful and padded forward FLOPs of a pass, with the token counts they come from."""

    useful: int
    padded: int
    real_tokens: int
    padded_tokens: int
    sequences: int
    batches: int

    @property
    def padding_share(self) -> float:
        """Share of the computed FLOPs spent on padding."""
        return 1 - self.useful / self.padded if self.padded else 0.0


def rates(flops: FlopCount, seconds: float, peak_flop_per_s: float | None) -> dict[str, float]:
    """The pass's FLOP metrics; the utilisation fractions only when a measured peak is given."""
    metrics = {
        "flops_useful": float(flops.useful),
        "flops_padded": float(flops.padded),
        TOKENS_REAL: float(flops.real_tokens),
        "tokens_padded": float(flops.padded_tokens),
        PADDING_SHARE: flops.padding_share,
    }
    if seconds > 0:
        metrics[USEFUL_FLOP_PER_S] = flops.useful / seconds
        metrics[PADDED_FLOP_PER_S] = flops.padded / seconds
        if peak_flop_per_s:
            metrics[PEAK_FLOP_PER_S] = float(peak_flop_per_s)
            metrics[MFU_USEFUL] = metrics[USEFUL_FLOP_PER_S] / peak_flop_per_s
            metrics[MFU_PADDED] = metrics[PADDED_FLOP_PER_S] / peak_flop_per_s
    return metrics
