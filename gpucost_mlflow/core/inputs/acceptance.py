"""The quality bar a protocol fixes before any timing is seen, one record per kind of output it judges.

Each output's rules (`workloads/<kind>/output.py`) read their part of `acceptance:` into these records; the judges
read them back. Kept apart from the protocol's loader so those rules can import it while the loader imports them.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_OUTPUT = "labels"  # a protocol that names no acceptance.output judges labels
LABEL_FIELDS = ("main_metric", "threshold", "per_bucket_threshold", "reference.max_metric_difference",
                "reference.min_label_agreement")


@dataclass(frozen=True)
class EmbeddingAcceptance:
    """The bar for embeddings: cosine with the reference's embedding of the same input, and optional retrieval."""

    cosine_min: float  # every input's cosine with the reference at or above
    cosine_median: float  # the median over the inputs at or above
    retrieval_k: int | None = None  # recall@k of same-label neighbours (needs gold labels), when declared
    retrieval_min_recall: float | None = None


@dataclass(frozen=True)
class GenerationAcceptance:
    """The bar for generated text against the fp32 reference pass's outputs of the same inputs."""

    min_exact_match: float  # share of outputs identical to the reference's, at or above
    min_token_agreement: float  # share of new-token positions holding the reference's token, at or above
    # The median new tokens per input may differ from the reference's by at most this share (MLPerf's +-10 %): a
    # variant that writes less is not faster for the same result.
    max_length_change: float = 0.10


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
    embeddings: EmbeddingAcceptance | None = None
    generations: GenerationAcceptance | None = None
