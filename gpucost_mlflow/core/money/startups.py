"""Start-ups as `gpucost deliver` really runs them, for the forecast (core/money/forecast.py): a lanes configuration
starts a fresh child per corpus, and a declared deliverables audit starts the reference variant's own child per
delivered corpus, sized from the reference variant's measured passes on the same device (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpucost_mlflow.core.money.forecast import Audit
from gpucost_mlflow.core.names import LOAD_S, SHAPE_SETUP_S, WARMUP_S


def lanes_of(config) -> int:
    """The lanes one pass of a configuration runs (1 when built by hand, without an identity)."""
    identity = getattr(config, "identity", None)
    return int(float(identity.lanes or 1)) if identity is not None else 1


def _figures(config, inputs: int | None, sample: int) -> tuple[float, float]:
    """A configuration's median load + warm-up + shape setup (a fresh child pays each) and its median pass per input
    (a whole pass over the sample when the corpus size is unknown: an upper bound)."""
    startup = sum(config.medians.get(key, 0.0) for key in (LOAD_S, WARMUP_S, SHAPE_SETUP_S))
    median = config.durations.median if config.durations.values else 0.0
    return startup, median / (inputs or max(1, sample))


@dataclass(frozen=True)
class AuditRule:
    """`deliverables.audit` as the forecast needs it: the sample each delivered corpus's audit labels, the reference
    variant that labels it, the inputs of the corpus its passes were timed on, and its figures per device."""

    sample: int
    reference: str
    inputs: int | None = None  # corpus.size: the inputs one measured pass processes
    measured: tuple[tuple[str, float, float], ...] = ()  # (device, load + warm-up s, s per input) of the reference

    def measure(self, configs: list) -> AuditRule:
        """The rule with the reference variant's measured figures on each device it has a completed pass on."""
        found: dict[str, tuple[float, float]] = {}
        for config in configs:
            if config.variant == self.reference and config.durations.values and config.device not in found:
                found[config.device] = _figures(config, self.inputs, self.sample)
        return replace(self, measured=tuple((device, *figures) for device, figures in found.items()))

    def on(self, config) -> Audit:
        """One audit as the configuration's delivery runs it: the reference's figures on its device where measured,
        else the configuration's own, said so."""
        labelled = min(self.sample, self.inputs) if self.inputs else self.sample
        for device, startup, per_input in self.measured:
            if device == config.device:
                return Audit(self.reference, labelled, startup, per_input, f"{self.reference}'s measured passes")
        startup, per_input = _figures(config, self.inputs, self.sample)
        return Audit(self.reference, labelled, startup, per_input,
                     f"{self.reference} not measured on {config.device}: {config.variant}'s own passes")


def audit_rule(declared: dict | None, reference: str, inputs: int | None) -> AuditRule | None:
    """The protocol's `deliverables.audit` (None when not declared) as the forecast's rule: its `sample`, labelled
    by the reference variant, whose passes over `inputs` size it."""
    return AuditRule(int(declared["sample"]), reference, inputs) if declared else None
