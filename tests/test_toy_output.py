"""A kind that brings a new output (not labels, embeddings or generations) is one folder and one registry line: its
`output.py` carries the output's rules (core/kinds/base.Output), and the protocol loader, the launcher's judge,
the recorder, the lanes' merge and the report ask those rules, never the output's name. Declared here through
GPUCOST_WORKLOADS, the override of the entry point a package would declare (docs/architecture.md, walk-throughs)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.report.build import build
from gpucost_mlflow.tracking import schema
from tests.helpers import CATALOG, VARIANTS, attempts_table, evidence_of, run_pass, toy_launch, write_protocol

pytestmark = pytest.mark.integration

INIT = '''
"""Word counts: a toy kind delivering a new output, `counts`."""
'''
CHILD = '''
"""The kind in the pass's child: each input's word count, no model at all."""
import json
from dataclasses import dataclass, field

from gpucost_mlflow.core.kinds.base import Work


@dataclass
class Counted:
    ids: list = field(default_factory=list)
    counts: list = field(default_factory=list)

    def batch_lengths(self):
        return []


def load(spec, device):
    def process(ids, texts, tokenizer, model, settings, device, on_batch=None):
        done = Counted()
        for number, (ident, text) in enumerate(zip(ids, texts), start=1):
            done.ids.append(ident)
            done.counts.append(len(text.split()))
            if on_batch:
                on_batch(number, number)
        return done

    def export(folder, outputs, duplicate_at):
        lines = [json.dumps({"id": i, "count": c}) for i, c in zip(outputs.ids, outputs.counts)]
        (folder / "counts.jsonl").write_text("".join(line + "\\n" for line in lines))

    return Work(None, None, process, lambda outputs, pass_s: {"missing_measurements": {"useful_flop_per_s": "toy"}},
                export, empty=Counted)
'''
LAUNCH = toy_launch("counter")
OUTPUT = '''
"""The rules of `counts`: every expected id once, each count the input's true number of words."""
import json
from types import SimpleNamespace

from gpucost_mlflow.core.judging import judge
from gpucost_mlflow.core.judging.verdicts import Check, basic_checks, merge_json_lines

NAME = "counts"
FILE = "counts.jsonl"
FILES = (FILE,)
MAIN_METRIC = "count_exact"
REFERENCE_CHECKS = ()
QUALITY_CHECKS = ()
COLUMNS = ()
FIELDS = {}
AUDITED = False
LIKE_FOR_LIKE = ()  # base.Output asks every output for it: nothing the toy counts depends on a setting
SECTION = ""
NO_SAMPLING = ""
FROM_USER_CODE = False
EXAMPLE_PROTOCOL = ""


def acceptance(f, metric):
    from gpucost_mlflow.core.inputs.acceptance import Acceptance

    return Acceptance(coverage=f.fraction("acceptance.coverage"), main_metric="", threshold=None,
                      per_bucket_threshold=None, reference_variant=f.get("acceptance.reference.variant", str),
                      max_metric_difference=None, min_label_agreement=None, output=NAME)


def scored(task):
    return False


def needs_reference(settings, reference_settings):
    return False


def read_back(folder, protocol, labels):
    path = folder / FILE
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return SimpleNamespace(ids=[row["id"] for row in rows], counts={row["id"]: row["count"] for row in rows},
                           format_errors=[] if path.exists() else ["counts file missing"])


def reference(run_id, metrics, folder, protocol, labels):
    return None


def judge_pass(given):
    back = given.back
    truth = {row["id"]: len(row["text"].split()) for row in given.rows}
    exact = sum(back.counts.get(i) == n for i, n in truth.items()) / len(truth)
    checks, counts = basic_checks(list(truth), back)  # format, exact ids, coverage: the core's, as every output's
    checks.append(Check("counts", exact == 1.0, f"{100 * exact:g} % of counts exact"))
    return judge.conclude(given, checks, counts, {MAIN_METRIC: exact})


def judge_against_reference(prior, metrics, back, reference, acceptance):
    return judge.rejudged(prior, REFERENCE_CHECKS, [], {}, metrics)


def preview(rows, back, gold_labels, folder):
    return None


def merge(folders, workdir):
    merge_json_lines(FILE, folders, workdir)


def figures(metrics):
    return f", counts exact {metrics[MAIN_METRIC]:.0%}" if MAIN_METRIC in metrics else ""


def bar(a):
    return "every word count exact"
'''


@pytest.fixture
def counter_kind(tmp_path, monkeypatch) -> Path:
    """The folder of a kind named `counter` delivering `counts`, on the path of this process and of the child."""
    package = tmp_path / "plugins" / "counter_kind"
    package.mkdir(parents=True)
    for name, text in {"__init__": INIT, "child": CHILD, "launch": LAUNCH, "output": OUTPUT}.items():
        (package / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv("PYTHONPATH", str(package.parent) + ":" + ":".join(sys.path))
    monkeypatch.setenv("GPUCOST_WORKLOADS", "counter:counts:counter_kind")  # the registry line
    variants = tmp_path / "variants.yaml"
    defaults = VARIANTS.read_text().split("\nseries:")[0]
    variants.write_text(defaults + "\nvariants:\n  count8: {batch_size: 8, workload: counter}\n")
    return variants


def test_a_kind_with_a_new_output_is_judged_recorded_and_reported_by_its_own_rules(store, tmp_path, counter_kind,
                                                                                    corpus_dir, model_dir):
    protocol = write_protocol(tmp_path / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("acceptance:\n", "acceptance:\n  output: counts\n")
                        .replace("    variant: batch8\n", "    variant: count8\n"))
    assert load_protocol(protocol).acceptance.output == "counts"
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol, "count8", variants=counter_kind)
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "pass count8: accepted" in result.output and "counts exact 100%" in result.output
    table = attempts_table("t")
    (row,) = table.to_dict("records")
    assert row["variant"] == "count8" and row["workload"] == "counter" and row["status"] == "accepted"
    run = MlflowClient().get_run(row["run_id"])
    assert run.data.params[schema.EXPORTED] == "counts.jsonl" and run.data.metrics["count_exact"] == 1.0
    built, _ = build(evidence_of("t"), load_protocol(protocol), protocol, load_catalog(CATALOG), load_variants(counter_kind))
    assert [a.configuration.variant for a in built.assessments] == ["count8"]
