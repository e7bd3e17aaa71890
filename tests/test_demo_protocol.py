"""The demo's job (issue 30, item 1): 2,000 corpora of 1,000 inputs, where throughput sets the hours billed, so the
what-if decision separates configurations by committed cost instead of tying them at one minimum bill."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.protocol_diff import changed_fields
from gpucost_mlflow.core.money.catalog import example_catalog
from tests.helpers import ROOT, SHIPPED_PROTOCOL
from tests.scenario import report

pytestmark = pytest.mark.unit

DEMO_PROTOCOL = ROOT / "projects" / "protocol-demo.yaml"
# Five passes each, in seconds, near what `make demo` measured on 2 CPU cores (README, "What the demo ends with").
DURATIONS = {
    "batch8": (10.9, 10.5, 10.9, 10.8, 11.0),
    "batch8-lengthgrouped": (4.3, 4.9, 4.5, 5.1, 4.6),
    "batch8-bf16": (1.9, 1.8, 1.85, 1.9, 1.8),
}


def test_the_demo_protocol_is_the_shipped_one_with_a_job_of_2000_corpora():
    demo = load_protocol(DEMO_PROTOCOL)
    assert demo.deliverables["expected"] == 2000 and demo.corpus_size == 1000
    assert "2,000 corpora of 1,000 texts" in demo.question and "(2 million inputs" in demo.question
    differences = changed_fields(SHIPPED_PROTOCOL.read_text(), DEMO_PROTOCOL.read_text())
    assert {d.field for d in differences} == {"question", "deliverables.expected", "deliverables.description"}


def test_the_demo_job_priced_by_the_hour_separates_configurations_by_committed_cost(experiment, tmp_path):
    for variant, seconds in DURATIONS.items():
        for value in seconds:
            experiment(variant, "AMD EPYC", value)
    catalog = tmp_path / "this-machine.csv"
    catalog.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-01"))

    _, one_corpus = report(catalog=catalog)
    assert set(one_corpus["committed_cost"]) == {"0.50"}  # one corpus after 4 h setup: 5 h billed whatever the speed

    built, job = report(catalog=catalog, protocol_path=DEMO_PROTOCOL)
    committed = dict(zip(job["variant"], job["committed_cost"]))
    assert committed == {"batch8-bf16": "0.60", "batch8-lengthgrouped": "0.80", "batch8": "1.10"}
    assert built.decision.startswith("Decision: batch8-bf16 on AMD EPYC, this-machine hourly, 1 lot, 6 h billed")
    assert "covers 2,000 corpus(es) of 1,000 inputs" in built.decision
