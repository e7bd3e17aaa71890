"""The demo's variants fitted to the host: a precision this device does not run faster than fp32 is left out.

On a CPU without native bf16 a bf16 pass is emulated (about 140 s instead of 4 s on 2 cores), so the demo would
spend most of an hour proving what the dense-matmul peak already says. The rule is the third series' own
(`core/campaign/proposal.py`): a precision whose cached peak is below fp32's is not proposed, and here not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# The demo's first and second series (projects/variants.yaml): the fp32 batch8 reference, then one change each against
# it. The batch sizes are swept by the third series, under the accepted changes; batch1 and batch4 alone, the race
# stopping them after 2-4 fp32 passes of 14 s, told nothing the demo's 7 minutes could spare (docs/benchmarks.md).
DEMO_VARIANTS = ("batch8", "batch8-bf16", "batch8-int8", "batch8-lengthgrouped")


@dataclass(frozen=True)
class HostFit:
    """The variants the demo runs here, in the order asked, and each left-out one with why."""

    kept: tuple[str, ...]
    left_out: dict[str, str]

    def line(self) -> str:
        """One line saying what was left out and why (empty when nothing was)."""
        if not self.left_out:
            return ""
        return "left out of the demo on this machine: " + "; ".join(
            f"{name} ({why})" for name, why in self.left_out.items())


def fit(precisions: Mapping[str, str], slow: Mapping[str, str]) -> HostFit:
    """Keep each variant (name -> precision) whose precision is not slow here; `slow` maps a precision to why."""
    kept = tuple(name for name, precision in precisions.items() if precision not in slow)
    left_out = {name: f"{precision} is not native here: {slow[precision]}"
                for name, precision in precisions.items() if precision in slow}
    return HostFit(kept, left_out)
