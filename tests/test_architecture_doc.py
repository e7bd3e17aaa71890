"""docs/architecture.md's walk-throughs name files that exist: the map stays true as files move."""

from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.unit

DOC = ROOT / "docs" / "architecture.md"


def _walk_throughs() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## Walk-throughs"):text.index("## The decision path")]


def test_every_existing_file_a_walk_through_names_is_in_the_tree():
    named = set(re.findall(r"`((?:gpucost_mlflow|tests|docs|projects|catalog)/[\w./<>-]+|setup\.cfg)`", _walk_throughs()))
    examples = ("reranking", "openvino", "reserved", "cloudprices", "<kind>")  # the new files each walk-through adds
    missing = [path for path in sorted(named) if not any(word in path for word in examples) and not (ROOT / path).exists()]
    assert named and not missing, missing


def test_the_engines_and_billing_seams_the_walk_throughs_name_are_where_they_say():
    from gpucost_mlflow.core.kinds import engines
    from gpucost_mlflow.core.money import billing
    from gpucost_mlflow.report import render

    assert engines.ENGINES and billing.KINDS and render.SECTIONS
    setup = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    assert "gpucost.workloads =" in setup and "classification = gpucost_mlflow.workloads.classification:KIND" in setup
