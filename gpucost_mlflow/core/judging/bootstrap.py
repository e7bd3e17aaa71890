"""A metric's bar judged with its bootstrap interval over inputs (issue 51), as label agreement is by its exact one.

The main metric (macro-F1 or accuracy) of a pass, on the whole corpus and in each length bucket, is resampled over
its inputs with scipy's `bootstrap` (percentile interval, the protocol's declared seed and resample count, at its
`confidence`). Against the reference the resampling is paired: the same inputs drawn for both passes, so only the
answers that changed move the difference. An absolute bar (`threshold`, `per_bucket_threshold`) is passed when the
lower bound reaches it and failed when the upper bound is below it; `max_metric_difference` is passed when the whole
interval of the difference lies within +-the bar and failed when it lies wholly outside; anything else is not shown,
with the inputs that would show it at the observed value (the interval narrows as one over the square root of the
inputs: an estimate, said "about"). Pure: numpy and scipy, no torch, no mlflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpucost_mlflow.core import approximate
from gpucost_mlflow.core.inputs.acceptance import Resampling
from gpucost_mlflow.core.judging.bounds import FAILED, NOT_SHOWN, PASSED
from gpucost_mlflow.core.names import ACCURACY, MACRO_F1
from gpucost_mlflow.core.records import Record

AT_LEAST, WITHIN = "at least", "within"  # an absolute bar; a bar on the difference with the reference
BATCH = 500  # resamples computed at once: bounds the memory at BATCH x inputs per array


def _codes(values: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """Labels as integer codes in `labels`' order; anything else (an unparsed answer) is -1, never a label."""
    index = {label: code for code, label in enumerate(labels)}
    return np.fromiter((index.get(value, -1) for value in values), dtype=np.int64, count=len(values))


def _accuracy(gold: np.ndarray, guess: np.ndarray, kinds: int) -> np.ndarray:
    return (gold == guess).mean(axis=-1)


def _macro_f1(gold: np.ndarray, guess: np.ndarray, kinds: int) -> np.ndarray:
    """Macro-F1 over the last axis, over the labels present in each resample's gold answers (core/judging/quality.py's
    rule: a ratio with a zero denominator is 0)."""
    total = np.zeros(gold.shape[:-1])
    present = np.zeros(gold.shape[:-1])
    for code in range(kinds):
        is_gold, is_guess = gold == code, guess == code
        tp = (is_gold & is_guess).sum(axis=-1)
        fp = (~is_gold & is_guess).sum(axis=-1)
        fn = (is_gold & ~is_guess).sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / np.maximum(2 * tp + fp + fn, 1), 0.0)
        here = is_gold.any(axis=-1)
        total += np.where(here, f1, 0.0)
        present += here
    return np.where(present > 0, total / np.maximum(present, 1), 0.0)


METRICS = {ACCURACY: _accuracy, MACRO_F1: _macro_f1}


def _interval(data: tuple[np.ndarray, ...], statistic, confidence: float,
              resampling: Resampling) -> tuple[float, float]:
    """The percentile interval of `statistic` over inputs drawn together from every array in `data` (paired)."""
    from scipy.stats import bootstrap

    common = {"paired": True, "vectorized": True, "n_resamples": resampling.resamples, "batch": BATCH,
              "confidence_level": confidence, "method": "percentile"}
    rng = np.random.default_rng(resampling.seed)
    try:
        found = bootstrap(data, statistic, rng=rng, **common)
    except TypeError:  # scipy before 1.15 names the generator random_state
        found = bootstrap(data, statistic, random_state=rng, **common)
    return float(found.confidence_interval.low), float(found.confidence_interval.high)


@dataclass(frozen=True)
class MetricBound:
    """A metric (or its difference with the reference) against its bar: the value, its interval, the outcome and,
    when not shown, about how many inputs would show it."""

    name: str  # the metric and where: 'macro_f1', 'bucket_long_macro_f1'
    value: float
    low: float
    high: float
    bar: float
    rule: str  # AT_LEAST or WITHIN
    inputs: int
    confidence: float
    total: int = 0  # the corpus's inputs, when this is one bucket of it (0: the bound is over the whole corpus)

    @property
    def outcome(self) -> str:
        if self.rule == AT_LEAST:
            return PASSED if self.low >= self.bar else FAILED if self.high < self.bar else NOT_SHOWN
        if -self.bar <= self.low and self.high <= self.bar:
            return PASSED
        return FAILED if self.low > self.bar or self.high < -self.bar else NOT_SHOWN

    @property
    def needed(self) -> int | None:
        """About how many inputs would show the bar at the observed value (the interval's half-width shrinking as one
        over the square root of the inputs), counted as a whole corpus with the same bucket mix for a bucket's bar;
        None when shown, or when no corpus shows it (the value is not inside the bar)."""
        if self.outcome != NOT_SHOWN:
            return None
        if self.rule == AT_LEAST:
            margin, half = self.value - self.bar, self.value - self.low
        else:
            margin, half = self.bar - abs(self.value), max(self.high - self.value, self.value - self.low)
        if margin <= 0 or half <= 0 or self.inputs < 2:
            return None
        here = max(self.inputs + 1, math.ceil(self.inputs * (half / margin) ** 2))
        corpus = self.total or self.inputs
        return math.ceil(here * corpus / self.inputs)  # a bucket's need as a corpus with the same mix

    def words(self) -> str:
        """'macro_f1 0.8123 (95 % bootstrap interval 0.7912-0.8330 over 500 inputs; bar 0.80)', and for a bar not
        shown the inputs that would show it."""
        what = self.name if self.rule == AT_LEAST else f"{self.name} difference"
        bar = f"at least {self.bar:g}" if self.rule == AT_LEAST else f"within +-{self.bar:g}"
        said = (f"{what} {self.value:+.4f}" if self.rule == WITHIN else f"{what} {self.value:.4f}") + (
            f" ({100 * self.confidence:g} % bootstrap interval {self.low:.4f} to {self.high:.4f} over "
            f"{self.inputs:,} inputs; bar {bar})")
        if self.outcome != NOT_SHOWN:
            return said
        needed = self.needed
        more = (f"about {approximate.at_least(needed):,} needed at this value" if needed is not None
                else "too few to resample" if self.inputs < 2
                else "no corpus shows it at this value (it is not inside the bar)")
        where = f"{self.total:,} inputs ({self.inputs:,} in this bucket)" if self.total else f"{self.inputs:,} inputs"
        return f"{said}: quality not shown on {where}: {more}"

    def record(self) -> dict:
        return {"name": self.name, "value": self.value, "low": self.low, "high": self.high, "bar": self.bar,
                "rule": self.rule, "inputs": self.inputs, "total": self.total or self.inputs,
                "confidence": self.confidence, "outcome": self.outcome,
                "inputs_needed": self.needed}


def _bound(name: str, value: float, data: tuple[np.ndarray, ...], statistic, bar: float, rule: str,
           at: tuple[float, Resampling], total: int) -> MetricBound:
    """One bar's bound: `at` is the confidence and the resampling it is drawn with."""
    confidence, resampling = at
    inputs = len(data[0])
    if inputs < 2:  # one input resamples to itself: it shows nothing, its interval is the metric's whole range
        low, high = (0.0, 1.0) if rule == AT_LEAST else (-1.0, 1.0)
    else:
        low, high = _interval(data, statistic, confidence, resampling)
    return MetricBound(name, value, low, high, bar, rule, inputs, confidence, total if total != inputs else 0)


@dataclass(frozen=True)
class Scored(Record):
    """The inputs a metric is computed over: their ids, gold labels and length buckets, in one order; a verdict
    keeps its record so a pass judged again later resamples the same inputs without the corpus."""

    ids: tuple[str, ...]
    gold: tuple[str, ...]
    buckets: tuple[str, ...]

    @classmethod
    def from_rows(cls, rows: Sequence[dict]) -> Scored:
        return cls(tuple(row["id"] for row in rows), tuple(row["label"] for row in rows),
                   tuple(str(row.get("bucket", "")) for row in rows))

    @property
    def labels(self) -> tuple[str, ...]:
        """The gold labels present: macro-F1 averages over them (a predicted label outside them is only wrong)."""
        return tuple(sorted(set(self.gold)))

    def groups(self) -> list[tuple[str, list[int]]]:
        """('' for the whole corpus, then each bucket) with the positions of its inputs."""
        found = [("", list(range(len(self.ids))))]
        for bucket in sorted(set(self.buckets) - {""}):
            found.append((bucket, [i for i, b in enumerate(self.buckets) if b == bucket]))
        return found


def _key(metric: str, bucket: str) -> str:
    return f"bucket_{bucket}_{metric}" if bucket else metric


def absolute_bounds(scored: Scored, labels: dict[str, str], metric: str, threshold: float, bucket_threshold: float,
                    confidence: float, resampling: Resampling) -> list[MetricBound]:
    """The metric on the whole corpus (against `threshold`) and in each bucket (against `bucket_threshold`), each with
    its bootstrap interval; the inputs are those with a prediction, as the point metrics are."""
    model_labels = scored.labels
    kinds = len(model_labels)
    compute = METRICS[metric]
    found = []
    total = sum(1 for ident in scored.ids if ident in labels)
    for bucket, positions in scored.groups():
        positions = [i for i in positions if scored.ids[i] in labels]
        gold = _codes([scored.gold[i] for i in positions], model_labels)
        guess = _codes([labels[scored.ids[i]] for i in positions], model_labels)
        value = float(compute(gold, guess, kinds)) if positions else 0.0
        found.append(_bound(_key(metric, bucket), value, (gold, guess), lambda g, p, axis=-1: compute(g, p, kinds),
                            bucket_threshold if bucket else threshold, AT_LEAST, (confidence, resampling), total))
    return found


def difference_bounds(scored: Scored, labels: dict[str, str], reference: dict[str, str], metric: str,
                      most: float, confidence: float, resampling: Resampling) -> list[MetricBound]:
    """The metric's difference with the reference (variant minus reference) on the whole corpus and in each bucket,
    with its paired bootstrap interval: the same inputs drawn for both passes. An input missing from a pass counts as
    a wrong answer there (coverage rejects such a pass on its own)."""
    model_labels = scored.labels
    kinds = len(model_labels)
    compute = METRICS[metric]

    def statistic(g, mine, theirs, axis=-1):
        return compute(g, mine, kinds) - compute(g, theirs, kinds)

    found = []
    for bucket, positions in scored.groups():
        gold = _codes([scored.gold[i] for i in positions], model_labels)
        mine = _codes([labels.get(scored.ids[i], "") for i in positions], model_labels)
        theirs = _codes([reference.get(scored.ids[i], "") for i in positions], model_labels)
        value = float(statistic(gold, mine, theirs)) if positions else 0.0
        found.append(_bound(_key(metric, bucket), value, (gold, mine, theirs), statistic, most, WITHIN,
                            (confidence, resampling), len(scored.ids)))
    return found


def outcome_of(bounds: Sequence[MetricBound]) -> str:
    """Several bars as one check: failed if any failed, else not shown if any was not shown, else passed."""
    outcomes = {bound.outcome for bound in bounds}
    return FAILED if FAILED in outcomes else NOT_SHOWN if NOT_SHOWN in outcomes else PASSED
