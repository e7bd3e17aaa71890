"""An output outside the package brings its own bar with no edit in core/: the protocol field its rules declare
(`FIELDS`) joins the protocol's field tree and is refused, naming the output, in another output's protocol; the check
it declares (`QUALITY_CHECKS`) is named by the judge's quality verdict. The toy kind is tests/test_toy_output.py's,
declared through GPUCOST_WORKLOADS (docs/architecture.md, "What lives in core/, what in a kind's folder")."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.judging.judge import settle
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.judging.verdicts import Check
from tests.helpers import write_protocol
from tests.test_toy_output import CHILD, INIT, LAUNCH, OUTPUT

pytestmark = pytest.mark.unit

# The toy's rules with a bar field and a quality check of their own: the least words an input must have.
BAR_OUTPUT = (OUTPUT.replace("QUALITY_CHECKS = ()\n", 'QUALITY_CHECKS = ("counts",)\n')
              .replace("FIELDS = {}\n", 'FIELDS = {"acceptance.min_words": None}\n')
              .replace("output=NAME)", 'output=NAME, bar=f.get("acceptance.min_words", int))'))


@pytest.fixture
def words_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind `wordbar` delivering `counts` by the rules above, importable and declared in this process."""
    package = tmp_path / "plugins" / "word_bar_kind"
    package.mkdir(parents=True)
    for name, text in {"__init__": INIT, "child": CHILD, "launch": LAUNCH, "output": BAR_OUTPUT}.items():
        (package / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv("GPUCOST_WORKLOADS", "wordbar:counts:word_bar_kind")


def _protocol(tmp_path: Path, acceptance: str) -> Path:
    """The test protocol with these lines added under `acceptance:`."""
    path = write_protocol(tmp_path / "protocol.yaml")
    path.write_text(path.read_text().replace("acceptance:\n", f"acceptance:\n{acceptance}"))
    return path


def test_a_bar_field_an_outside_output_declares_is_known_to_its_protocols_only(tmp_path, words_kind):
    counts = _protocol(tmp_path, "  output: counts\n  min_words: 3\n")
    assert load_protocol(counts).acceptance.bar == 3
    misspelt = _protocol(tmp_path, "  output: counts\n  min_word: 3\n")
    with pytest.raises(GpucostError, match=re.escape("unknown field 'acceptance.min_word' (did you mean "
                                                     "'acceptance.min_words'?)")):
        load_protocol(misspelt)
    labels = _protocol(tmp_path, "  min_words: 3\n")
    with pytest.raises(GpucostError, match=re.escape("field 'acceptance.min_words' belongs to a protocol whose "
                                                     "acceptance.output is counts; this protocol's output is labels")):
        load_protocol(labels)


def test_a_quality_check_an_outside_output_declares_is_named_by_the_quality_verdict(words_kind, monkeypatch):
    failed = [Check("counts", False, "2 of 3 counts exact")]
    assert settle(True, "", failed, "") == (Status.REJECTED, "counts: 2 of 3 counts exact", "failed: counts")
    monkeypatch.delenv("GPUCOST_WORKLOADS")
    assert settle(True, "", failed, "")[2] == "passed"
