"""Answers that changed against the reference, by direction (issue 51; Dutta et al., NeurIPS 2024): where gold labels
exist, the inputs right in the reference and wrong in the variant (lost) and the reverse (gained), with the exact
McNemar p-value (a two-sided binomial test on the discordant pairs, scipy's `binomtest`). A variant can lose correct
answers while its macro-F1 holds; this count makes it visible. A figure of the report, never a bar of its own."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from gpucost_mlflow.core.names import EXPECTED_IDS
from gpucost_mlflow.core.records import Record


def correct_ids(gold: Mapping[str, str], labels: Mapping[str, str]) -> list[str]:
    """The ids whose label is the gold one, sorted: what a pass records so its flips can be counted later without
    the corpus (a re-judge reads them back from both verdicts)."""
    return sorted(ident for ident, label in gold.items() if labels.get(ident) == label)


@dataclass(frozen=True)
class Flips(Record):
    """The reference and the variant on the same inputs: lost (right in the reference, wrong in the variant),
    gained (the reverse), and the inputs compared."""

    lost: int
    gained: int
    inputs: int

    DERIVED = ("p_value",)
    RENAMED: ClassVar[dict[str, str]] = {"p_value": "mcnemar_p"}

    @property
    def p_value(self) -> float | None:
        """The exact McNemar p-value of lost against gained; None when no answer changed (nothing to test)."""
        from scipy.stats import binomtest

        changed = self.lost + self.gained
        return float(binomtest(self.lost, changed, 0.5).pvalue) if changed else None

    def line(self) -> str:
        """'3 lost, 1 gained of 500 inputs (exact McNemar p = 0.625)': what the report's quality table says."""
        if not self.lost + self.gained:
            return f"no correct answer changed of {self.inputs:,} inputs"
        return (f"{self.lost} lost, {self.gained} gained of {self.inputs:,} inputs (exact McNemar p = "
                f"{self.p_value:.3g})")


def count(ids: Sequence[str], variant_correct: Collection[str], reference_correct: Collection[str]) -> Flips:
    """The flips over these inputs (the reference's), from each pass's correct ids."""
    mine, theirs = set(variant_correct), set(reference_correct)
    lost = sum(1 for ident in ids if ident in theirs and ident not in mine)
    gained = sum(1 for ident in ids if ident in mine and ident not in theirs)
    return Flips(lost, gained, len(ids))


def from_verdicts(variant: Mapping, reference: Mapping) -> Flips | None:
    """The flips of a pass judged again, from the correct ids both verdicts recorded when they were first judged (the
    corpus's gold labels are not needed again); None when either recorded none (no gold labels, another output, or
    a pass recorded before flips were counted)."""
    if "correct_ids" not in variant or "correct_ids" not in reference:
        return None
    mine, theirs = set(variant["correct_ids"]), set(reference["correct_ids"])
    inputs = int((reference.get("ids") or {}).get(EXPECTED_IDS) or len(mine | theirs))
    return Flips(len(theirs - mine), len(mine - theirs), inputs)
