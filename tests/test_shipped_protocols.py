"""Every shipped protocol's bars can be shown on its own shipped corpus (issue 61, docs/protocol.md "The shipped
bars"): the fp32 reference's outputs there, recorded with the real model (tests/recorded/reference_outputs.py),
judged by the same intervals a pass is. A bar its corpus cannot show rejects every pass "quality not shown", the
reference's first: no campaign under that protocol could ever decide."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from gpucost_mlflow.core.inputs.protocol import Protocol, load_protocol
from gpucost_mlflow.core.judging import bootstrap
from gpucost_mlflow.core.judging.bounds import PASSED, share_bound
from tests.recorded.reference_outputs import FILE

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
KEPT = ("protocol-2026-12-04.yaml",)  # kept for the experiments locked to it, never a default again
SHIPPED = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "projects").glob("protocol*.yaml")
                 if p.name not in KEPT)
RECORDED = json.loads(gzip.decompress(FILE.read_bytes()))


def unshown(protocol: Protocol, outputs: dict) -> list[str]:
    """Each bar of the protocol that the reference's recorded outputs on its corpus cannot show, with its figure."""
    acceptance, bar = protocol.acceptance, protocol.acceptance.bar
    found = []
    if "labels" in outputs and getattr(acceptance, "threshold", None) is not None:
        scored = bootstrap.Scored(tuple(outputs["ids"]), tuple(outputs["gold"]), tuple(outputs["buckets"]))
        labels = dict(zip(outputs["ids"], outputs["labels"]))
        bounds = bootstrap.absolute_bounds(scored, labels, acceptance.main_metric, acceptance.threshold,
                                           acceptance.per_bucket_threshold, acceptance.confidence,
                                           acceptance.resampling)
        if acceptance.output == "labels":  # the reference against itself: the tightest any variant can get
            bounds += bootstrap.difference_bounds(scored, labels, labels, acceptance.main_metric,
                                                  acceptance.max_metric_difference, acceptance.confidence,
                                                  acceptance.resampling)
        found += [b.words() for b in bounds if b.outcome != PASSED]
    inputs = len(outputs.get("ids", ())) or outputs.get("inputs", 0)
    shares = {"min_label_agreement": getattr(acceptance, "min_label_agreement", None),
              "min_exact_match": getattr(bar, "min_exact_match", None),
              "cosine_min_share": getattr(bar, "cosine_min_share", None)}
    for name, share in shares.items():  # every input agrees with itself: what the exact interval still allows
        if share is not None and share_bound(inputs, inputs, share, acceptance.confidence).outcome != PASSED:
            found.append(f"{name} {share} not shown by {inputs} of {inputs} inputs")
    recall = getattr(bar, "retrieval_min_recall", None)
    if recall is not None and outputs["points"]["recall_at_k"] < recall:
        found.append(f"recall@k {outputs['points']['recall_at_k']} below {recall}")
    return found


@pytest.mark.parametrize("path", SHIPPED)
def test_the_reference_on_each_shipped_protocols_own_corpus_shows_every_bar(path):
    protocol = load_protocol(ROOT / path)
    assert path in RECORDED, f"{path}: no recorded reference outputs (tests/recorded/reference_outputs.py)"
    outputs = RECORDED[path]
    if "buckets" in outputs:  # the recording is of this protocol's corpus: its size and bucket mix
        assert len(outputs["buckets"]) == protocol.corpus_size
        assert dict(Counter(outputs["buckets"])) == protocol.buckets
    else:
        assert outputs["inputs"] == protocol.corpus_size
    assert unshown(protocol, outputs) == []


def test_the_bar_shipped_before_2026_12_05_could_not_be_shown_and_the_guard_says_so():
    # The medium bucket: 300 inputs, 4 of them plot; macro-F1 0.82 with a 95 % interval down to 0.54, under 0.60.
    old = load_protocol(ROOT / "projects" / KEPT[0])
    (said,) = unshown(old, RECORDED["projects/protocol.yaml"])
    assert said.startswith("bucket_medium_macro_f1 0.8244 (95 % bootstrap interval 0.5420 to") and "bar at least 0.6" in said
