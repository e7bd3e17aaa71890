"""The quality bar a protocol fixes before any timing is seen: the fields every output shares, the bootstrap its
metric's bars are judged by (`Resampling`, read by core/judging/bootstrap.py), and its own bar.

Each output's rules (`workloads/<kind>/output.py`) read `acceptance:` into `Acceptance`, their own fields (cosine for
embeddings, exact match for generated text) into a record of their own held in `bar`, so an output with a new bar
needs no edit here; the judges read them back. Kept apart from the protocol's loader so those rules can import it
while the loader imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucost_mlflow.core.records import Record

DEFAULT_OUTPUT = "labels"  # a protocol that names no acceptance.output judges labels
# Acceptance's fields that judge labels (the core's judge scores labels, whichever kind delivers them): an output
# that reads no label from its deliverable refuses them.
LABEL_FIELDS = ("main_metric", "threshold", "per_bucket_threshold", "reference.max_metric_difference",
                "reference.min_label_agreement")


@dataclass(frozen=True)
class Resampling(Record):
    """The protocol's declared bootstrap: how many resamples and the seed that draws them (`acceptance.bootstrap`)."""

    resamples: int = 2000
    seed: int = 0

    DERIVED = ("method",)  # verdict.json records it beside each checked bar, so a re-judge can say how it drew

    @property
    def method(self) -> str:
        return "percentile"


@dataclass(frozen=True)
class Acceptance:
    """The quality bar, fixed before any timing is seen (the label fields are None for an embeddings protocol)."""

    coverage: float
    main_metric: str
    threshold: float | None
    per_bucket_threshold: float | None
    reference_variant: str
    max_metric_difference: float | None
    min_label_agreement: float | None
    output: str = DEFAULT_OUTPUT  # what a pass delivers and is judged on: labels, embeddings or generations
    confidence: float = 0.95  # the protocol's: a share's bar is judged by its exact interval at it (judging/bounds.py)
    # a metric's bars by its bootstrap interval over inputs, drawn as declared (`acceptance.bootstrap`,
    # judging/bootstrap.py)
    resampling: Resampling = field(default_factory=Resampling)
    # settings a variant may change and still be judged against the reference, declared a change of work
    # (`acceptance.reference.changes_work`); any other difference in what is asked is not comparable (like_for_like.py)
    changes_work: tuple[str, ...] = ()
    # The output's own bar, a record of its rules (embeddings' cosine, generated text's exact match); None when the
    # fields above are all it has.
    bar: object | None = None
