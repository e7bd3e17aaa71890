"""One record base: every record's recorded form reads back as the record it was written from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from gpucost_mlflow.core.inputs.manifest import CorpusRecord, ModelRecord, PassPlace, Seeds
from gpucost_mlflow.core.kinds.endpoint import Endpoint
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import EngineRecord, WorkloadRecord
from gpucost_mlflow.core.records import Record
from gpucost_mlflow.workloads.generation.settings import Settings as GenerationSettings
from gpucost_mlflow.workloads.generation.task import GenerationSettings as Task
from gpucost_mlflow.workloads.generation.workload import Workload


@dataclass(frozen=True)
class Inner(Record):
    name: str
    size: int = 0


@dataclass(frozen=True)
class Outer(Record):
    inner: Inner
    many: tuple[Inner, ...] = ()
    maybe: Inner | None = None
    note: str = ""
    facts: dict = field(default_factory=dict)

    SPARSE = ("maybe", "note")
    RENAMED: ClassVar[dict[str, str]] = {"many": "items"}


SETTINGS = Settings(batch_size=8, precision="fp32", quantization="none", compile=False, attention="sdpa",
                    padding="longest", max_length=128, length_grouping="none", device="cpu")


def test_a_record_is_its_fields_made_plain_and_reads_back_typed():
    record = Outer(Inner("a", 1), (Inner("b"),), facts={"k": (1, 2)})
    assert record.record() == {"inner": {"name": "a", "size": 1}, "items": [{"name": "b", "size": 0}],
                               "facts": {"k": [1, 2]}}
    assert Outer.from_record(record.record()) == Outer(Inner("a", 1), (Inner("b"),), facts={"k": [1, 2]})
    assert Outer.from_record({**record.record(), "maybe": {"name": "c"}, "later": 1}).maybe == Inner("c")


def test_settings_leave_out_what_is_at_its_default_as_before():
    assert "lanes" not in SETTINGS.record() and "endpoint" not in SETTINGS.record()
    served = SETTINGS.changed(engine="openai", lanes=2, endpoint={"model": "m", "base_url": "http://h:1/v1"})
    assert served.record()["endpoint"]["base_url"] == "http://h:1/v1" and served.record()["lanes"] == 2
    assert Settings.from_record(served.record()) == served
    own = GenerationSettings(**{**SETTINGS.record(), "max_new_tokens": 4})
    assert GenerationSettings.from_record(own.record()) == own
    assert "max_new_tokens" not in GenerationSettings.from_record(SETTINGS.record()).record()


def test_the_manifest_sections_read_back_as_written():
    for record in (CorpusRecord("c.jsonl", "f", "p", "o", 3, ["a"], {"short": 1}),
                   Seeds(0, True, True, True, False), PassPlace("v"), PassPlace("v", run_id="r", experiment_id="1"),
                   ModelRecord("m", "r", "t", more={"folder_revision": "x"})):
        assert type(record).from_record(record.record()) == record
    assert "run_id" not in PassPlace("v").record()
    assert ModelRecord("m", "r", "t", more={"folder_revision": "x"}).record()["folder_revision"] == "x"


def test_a_workload_records_its_engine_last_and_reads_it_back():
    engine = EngineRecord("onnxruntime", "1.0", cache="c")
    assert engine.record() == {"name": "onnxruntime", "version": "1.0", "cache": "c"}
    workload = Workload("generation", "generation", "generations", engine,
                        generation=Task("say {text}", 4, False, "text"), labels=["a"])
    written = workload.record()
    assert list(written)[-1] == "engine" and written["generation"]["prompt_template"] == "say {text}"
    assert "cache_present_at_start" not in written
    assert Workload.from_record(written) == workload
    assert WorkloadRecord.from_record(WorkloadRecord("d", "k", "o").record()) == WorkloadRecord("d", "k", "o")
    assert Endpoint.from_record(Endpoint(base_url="http://h/v1").record()) == Endpoint(base_url="http://h/v1")


def test_an_engines_options_are_its_own_record_and_read_back_by_key_without_it():
    from gpucost_mlflow.workloads import ort

    options = ort.OrtOptions(exported_by_torch="2.9", output="labels", provider="CPUExecutionProvider")
    assert list(options.record()) == ["exporter", "opset", "exported_by_torch", "output", "graph_optimization",
                                      "quantization", "provider"]
    read = EngineRecord.from_record(EngineRecord("onnxruntime", "1.0", options, "c", False).record())
    assert read.options["provider"] == "CPUExecutionProvider" and read.options.record() == options.record()
    assert ort.OrtOptions.from_record(read.options) == options
