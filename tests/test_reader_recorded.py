"""A store written before the reader returned typed attempts (issue 54) reads to the same attempts table and the same
configurations.

tests/recorded/attempts-before-54/ holds a varied store's runs as the reader reads them (records.json: the benchmark's
campaigns with failed and rejected passes, two seeds, two model revisions and drivers of one variant, lanes, another
engine and workload, user code, an endpoint, repetitions, flags, overlapping clocks, an interrupted and a running
pass, an exclusion, deliverables, a confirmation run, a pass recorded with every fact as a tag, a second stage),
with the attempts table (attempts.csv) and the configurations (configurations.json: apart, and with the seeds
pooled) the code before the change made of them on 2026-12-03.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from gpucost_mlflow.core.inputs.manifest import Warmup
from gpucost_mlflow.core.measurement.repetitions import SETUP_IN_RATE
from gpucost_mlflow.core.names import DISTINCT_SHAPES, PASS_S, SHAPE_SETUP_S, STEADY_LAP_S
from gpucost_mlflow.report import seeded
from gpucost_mlflow.report.configurations import configurations
from gpucost_mlflow.report.measured import ReportAttempts
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.attempts_table import frame
from gpucost_mlflow.tracking.reader import attempts_of
from gpucost_mlflow.tracking.run_records import RunRecord

pytestmark = pytest.mark.unit

BEFORE = Path(__file__).resolve().parent / "recorded" / "attempts-before-54"  # tests/data/ is git-ignored (data/)
CORPUS_SIZE = 1000  # projects/protocol.yaml's corpus.size when the store was written


def _recorded():
    data = json.loads((BEFORE / "records.json").read_text(encoding="utf-8"))
    records = [RunRecord(**record) for record in data["records"]]
    for record in records:
        record.metrics = {k: float("nan") if v == "nan" else v for k, v in record.metrics.items()}
    return records, dt.datetime.fromisoformat(data["now"])


def _plain(value):
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if dataclasses.is_dataclass(value):
        return _plain(dataclasses.astuple(value))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _described(configs) -> list[dict]:
    """Each configuration's fields as plain data, its device's attempt spans as their digest (as the fixture keeps
    them); the attempts it holds are checked apart (the fixture predates them)."""
    found = []
    for config in configs:
        fields = {f.name: _plain(getattr(config, f.name)) for f in dataclasses.fields(config) if f.name != "attempts"}
        fields["attempt_spans"] = hashlib.sha256(json.dumps(fields["attempt_spans"]).encode()).hexdigest()
        found.append(json.loads(json.dumps(fields)))
    return found


def _times_parsed(table: pd.DataFrame) -> pd.DataFrame:
    for column in ("start_time", "end_time"):
        table[column] = table[column].map(lambda value: pd.Timestamp(value) if isinstance(value, str) else value)
    return table


def test_a_store_written_before_typed_attempts_reads_to_the_same_attempts_table():
    records, now = _recorded()
    found = attempts_of(records, now)
    # Read back as CSV both sides: the same table, whatever text a pandas version gives a timestamp (.000 or not).
    read, before = (_times_parsed(pd.read_csv(source)) for source in
                    (io.StringIO(frame(found).to_csv(index=False)), BEFORE / "attempts.csv"))
    pd.testing.assert_frame_equal(_as_before_62(read), before)
    assert [a.run_id for a in found] == [r.run_id for r in records]


def _as_before_62(read: pd.DataFrame) -> pd.DataFrame:
    """The table as read before issue 62, which adds to an old store's table only what says its rate includes setup:
    the steady-lap columns, empty (none recorded), and the note on each completed benchmark pass; and before issue
    63, whose race's `stopped` column is empty where no race ran."""
    new = [STEADY_LAP_S, SHAPE_SETUP_S, DISTINCT_SHAPES, "cold_shapes", "stopped"]
    assert read[new].isna().all().all(), read[new].dropna(how="all")
    noted = read["notes"].fillna("").str.contains(SETUP_IN_RATE, regex=False)
    assert noted.sum() and (noted <= read[PASS_S].notna()).all()
    notes = read["notes"].map(lambda text: text if not isinstance(text, str) else
                              text.replace(f"; {SETUP_IN_RATE}", "").replace("(min_laps, min_measured_s)",
                                                                               "(min_measured_s)"))
    return read.drop(columns=new).assign(notes=notes)


def test_its_configurations_are_the_same_grouped_by_the_recorded_identity():
    records, now = _recorded()
    measured = ReportAttempts.of(attempts_of(records, now))
    before = json.loads((BEFORE / "configurations.json").read_text(encoding="utf-8"))
    apart = configurations(measured, CORPUS_SIZE)
    assert _before_62(apart) == before["apart"]
    assert _before_62(configurations(seeded.pooled_seeds(measured), CORPUS_SIZE)) == before["seeds"]
    for config in apart:  # each holds its benchmark attempts, in order: those of its identity, its counted runs among them
        held = [a.run_id for a in config.attempts]
        assert held == [a.run_id for a in measured.attempts if a.role == "benchmark" and a.identity == config.identity]
        assert set(config.pass_runs) <= set(held) and len(held) == len(config.statuses)
        assert measured.attempts_of(config) is config.attempts


def _before_62(configs) -> list[dict]:
    """The configurations as described before issue 62, once each says that all its counted passes' rate includes
    setup (none of them recorded a steady lap), and before issue 63 (no race stopped any)."""
    found = _described(configs)
    for config in found:
        assert config.pop("setup_in_rate") == len(config["durations"][0])
        assert config.pop("stopped") == ""
    return found


def test_each_attempt_carries_its_identity_and_the_table_shows_it():
    records, now = _recorded()
    found = attempts_of(records, now)
    table = frame(found)
    for attempt, row in zip(found, table.to_dict("records")):
        identity = attempt.identity
        assert (identity.device, identity.variant, identity.workload, int(identity.lanes), identity.seed) == \
            (row["device"], row["variant"], row["workload"], row["lanes"], row["seed"])
    old = next(a for a in found if a.row["engine"] == "torch" and a.identity.model_revision == "")
    assert old.identity.engine == "torch" and old.identity.lanes == "1"  # a field recorded before it existed
    with pytest.raises(TypeError):
        found[0].row["status"] = "accepted"  # read-only


def test_each_shipped_variants_settings_read_back_from_its_params_as_written():
    from types import SimpleNamespace

    from gpucost_mlflow.core.inputs.variants import load_variants
    from gpucost_mlflow.core.kinds import registry

    root = Path(__file__).resolve().parents[1]
    for variant in load_variants(root / "projects" / "variants.yaml").values():
        settings = variant.settings
        manifest = SimpleNamespace(settings=settings, model=SimpleNamespace(revision="r", tokenizer_revision="t"),
                                   corpus=SimpleNamespace(order_digest="d"), warmup=Warmup(32, 1),
                                   seeds=SimpleNamespace(record=lambda: {"torch": 0}), stack={})
        params = schema.params_from_manifest(manifest)
        record = registry.of_settings(settings).settings_record()
        assert schema.settings_from_params(params, record) == settings, variant.name
    assert schema.settings_from_params({"setting.batch_size": "8"}) is None  # part of a record: not a whole one
    assert schema.settings_record({"setting.batch_size": "8", "setting.compile": "False"}) == \
        {"batch_size": 8, "compile": False}


def _manifest(variant, warmup):
    """A pass's manifest as the launcher makes it (flow/preparation.py), for a shipped variant."""
    from gpucost_mlflow.core.inputs.manifest import CorpusRecord, Manifest, ModelRecord, PassPlace, Seeds, Stack
    from gpucost_mlflow.core.kinds.workload import EngineRecord, WorkloadRecord

    settings = variant.settings
    return Manifest(
        run=PassPlace(variant.name, role="benchmark"), settings=settings,
        corpus=CorpusRecord("corpus.jsonl", "f" * 64, "c" * 64, "o" * 64, 30),
        model=ModelRecord("model", "m" * 40, "t" * 40), stack=Stack(device_names=["cpu"], backend="cpu", driver="d1"),
        code={}, dependencies={}, warmup=warmup, seeds=Seeds(7, True, False, False, False), protocol_digest="p" * 64,
        protocol_path="protocol.yaml",
        workload=WorkloadRecord(settings.workload, settings.workload, "labels", EngineRecord(settings.engine, "1")))


def test_a_pass_reads_back_with_the_settings_warm_up_tokenizer_and_corpus_order_it_wrote(store):
    """Written as the launcher writes it (its params from its manifest, its start tags and facts in one batch), a
    pass comes back typed: the kind's settings, the warm-up as the manifest's own record, the tokenizer revision and
    the corpus order; those params made again from what was read are the params written."""
    from types import SimpleNamespace

    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.core.inputs.variants import load_variants
    from gpucost_mlflow.tracking import pass_run, reader, writer
    from gpucost_mlflow.tracking.experiments import Experiment

    client = MlflowClient()
    experiment = Experiment(client.create_experiment("written"), "written")
    root = Path(__file__).resolve().parents[1]
    warmup = Warmup(32, 1, "the first inputs", "none")
    written = {}
    shipped = load_variants(root / "projects" / "variants.yaml").values()
    each = {(v.settings.workload, v.settings.engine): v for v in shipped}  # one variant of each workload and engine
    for variant in each.values():
        manifest = _manifest(variant, warmup)
        run_id = client.create_run(experiment.id).info.run_id
        tags = writer.start_tags(role="benchmark", variant=variant.name, basis=writer.Basis("cpu", "cpu", "c" * 64,
                                                                                            "p" * 64))
        params = schema.params_from_manifest(manifest)
        dataset = pass_run.dataset_fields([{"id": "1", "text": "a"}], manifest.corpus.path, "c" * 16)
        pass_run.record_start(client, run_id, params, tags, [], dataset)
        written[run_id] = (manifest, params)
    found = reader.attempts(client, experiment)
    assert {a.run_id for a in found} == set(written)
    for attempt in found:
        manifest, params = written[attempt.run_id]
        assert attempt.settings == manifest.settings
        assert attempt.warmup == Warmup(32, 1)  # what its params hold of it: the inputs and passes
        assert (attempt.tokenizer_revision, attempt.corpus_order) == ("t" * 40, "o" * 64)
        again = SimpleNamespace(settings=attempt.settings, warmup=attempt.warmup, seeds=manifest.seeds,
                                model=SimpleNamespace(revision=attempt.identity.model_revision,
                                                      tokenizer_revision=attempt.tokenizer_revision),
                                corpus=SimpleNamespace(order_digest=attempt.corpus_order), stack=manifest.stack)
        assert schema.params_from_manifest(again) == params


def test_a_pass_recorded_before_a_param_reads_it_empty():
    records, now = _recorded()
    old = [a for a in attempts_of(records, now) if not a.tokenizer_revision]
    assert old and all(a.warmup == Warmup() and a.corpus_order == "" for a in old)
    assert schema.warmup_from_params({"warmup.inputs": "32"}) == Warmup(inputs=32)
