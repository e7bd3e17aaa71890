"""Embeddings through an endpoint (issue 53, docs/engines.md): `engine: openai` with `endpoint.api: embeddings` sends
the corpus to `/v1/embeddings` through the `openai` client and is timed, judged by cosine and recorded like every
embeddings pass. The server is tests/fakes/embeddings_server.py (no real one installs here offline), started by the
pass itself, serving the packaged all-MiniLM-L6-v2 with transformers; the reference is the same model's fp32 torch pass.
"""

from __future__ import annotations

import os
import sys

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import read_declaration
from gpucost_mlflow.core.names import ENDPOINT_FAILED_TAG, TOKENS_INPUT, USEFUL_FLOP_PER_S
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.workloads import endpoint_client
from tests.helpers import ROOT, checks_of
from tests.test_embeddings import embeddings_protocol  # noqa: F401 - the 30-input embeddings protocol

SERVE = f"{sys.executable} -m tests.fakes.embeddings_server {{model}} --port {{port}}"
# max_length 64: two of the slice's 30 texts (77 and 114 tokens) are cut, by torch and before they are sent alike
DEFAULTS = """defaults: {batch_size: 8, precision: fp32, quantization: none, compile: false, attention: sdpa,
  padding: longest, max_length: 64, length_grouping: none, device: auto}
"""
TEST_VARIANTS = DEFAULTS + f"""
variants:
  embed-batch8: {{batch_size: 8, workload: embeddings}}
  served-embed-c4:
    batch_size: 8
    workload: embeddings
    engine: openai
    endpoint: {{serve: "{SERVE}", api: embeddings, concurrency: 4}}
"""


def _declared(tmp_path, variant: str):
    path = tmp_path / "variants.yaml"
    path.write_text(DEFAULTS + f"variants:\n  x: {variant}\n", encoding="utf-8")
    return read_declaration(path).variant("x").settings


@pytest.mark.unit
@pytest.mark.parametrize(("variant", "message"), [
    ("{workload: embeddings, engine: openai, endpoint: {model: m, base_url: 'http://h/v1'}}",
     "workload embeddings sends endpoint.api embeddings, not chat; declare endpoint.api: embeddings"),
    ("{workload: embeddings, engine: openai, endpoint: {model: m, base_url: 'http://h/v1', api: completions}}",
     "workload embeddings sends endpoint.api embeddings, not completions"),
    ("{workload: generation, engine: openai, endpoint: {model: m, base_url: 'http://h/v1', api: embeddings}}",
     "workload generation sends endpoint.api chat or completions, not embeddings"),
])
def test_an_endpoint_api_the_kind_does_not_send_is_refused_when_the_variants_are_read(tmp_path, variant, message):
    with pytest.raises(GpucostError, match=message) as found:
        _declared(tmp_path, variant)
    assert "\n" not in str(found.value)


@pytest.mark.unit
def test_the_openai_engine_serves_embeddings_through_its_api(tmp_path):
    from gpucost_mlflow.core.kinds import registry

    assert {"embeddings", "generation"} <= set(registry.served_by("openai"))
    settings = _declared(tmp_path, "{workload: embeddings, engine: openai, endpoint: {model: m, base_url: "
                                   "'http://h/v1', api: embeddings}}")
    assert settings.endpoint.api == "embeddings"


@pytest.mark.unit
def test_texts_are_cut_where_the_torch_path_truncates_them():
    from gpucost_mlflow.execution import models
    from gpucost_mlflow.workloads.embeddings.with_openai import cut
    from gpucost_mlflow.workloads.minilm import base_model_dir

    tokenizer = models.load_tokenizer(base_model_dir())
    texts = ["Don't stop: café au lait, s'il vous plaît!" * 20, "short text", "unaffable " * 40]
    sent = cut(texts, tokenizer, 32)
    assert sent[1] == "short text" and sent[0] != texts[0]
    assert tokenizer(sent)["input_ids"] == tokenizer(texts, truncation=True, max_length=32)["input_ids"]


@pytest.mark.unit
def test_a_request_that_fails_leaves_its_inputs_without_output_and_is_tagged(tmp_path):
    from gpucost_mlflow.execution import models
    from gpucost_mlflow.execution.serving import free_port
    from gpucost_mlflow.workloads.embeddings import with_openai
    from gpucost_mlflow.workloads.minilm import base_model_dir

    settings = _declared(tmp_path, f"{{workload: embeddings, batch_size: 2, engine: openai, endpoint: {{model: m, "
                                   f"base_url: 'http://127.0.0.1:{free_port()}/v1', api: embeddings, max_retries: 0, "
                                   "timeout_s: 5}}")
    endpoint = settings.endpoint
    client = endpoint_client.Client({"base_url": endpoint.url, "api_key": "x", "timeout": 5, "max_retries": 0}, "m",
                                    endpoint, "nowhere")
    done = with_openai.process(["a", "b", "c"], ["one", "two", "three"], models.load_tokenizer(base_model_dir()),
                               client, settings, None)
    assert done.ids == [] and len(client.failed) == 3 and client.failed[0].startswith("a: APIConnectionError")
    recorded = with_openai._utilisation(client, done, 1.0)
    assert recorded["tags"][ENDPOINT_FAILED_TAG].startswith("3: a: ")
    assert recorded["missing_measurements"][USEFUL_FLOP_PER_S] == endpoint_client.NOT_COUNTED


@pytest.fixture(scope="module")
def served_embeddings(tmp_path_factory, corpus_dir, embeddings_protocol, migrated_store):  # noqa: F811
    """One store: the fp32 torch reference embed-batch8, then the served encoder at 4 requests in flight."""
    from tests.helpers import use_store

    folder = tmp_path_factory.mktemp("endpoint-embeddings")
    variants = folder / "variants.yaml"
    variants.write_text(TEST_VARIANTS, encoding="utf-8")
    outputs = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_store(folder, monkeypatch, migrated_store)
        # the pass's child works from the store's folder: the stand-in server is found as `tests.fakes` from the root
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])))
        for variant in ("embed-batch8", "served-embed-c4"):
            result = CliRunner().invoke(main, ["pass", "--variant", variant, "--corpus",
                                               str(corpus_dir / "comparison.jsonl"), "--variants", str(variants),
                                               "--experiment", "endpoint-embeddings", "--protocol",
                                               str(embeddings_protocol)])
            outputs[variant] = result.output
        client = MlflowClient()
        runs = {run.data.tags[schema.VARIANT]: run for run in
                client.search_runs([mlflow.get_experiment_by_name("endpoint-embeddings").experiment_id])}
        yield runs, outputs
        mlflow.set_tracking_uri(None)


@pytest.mark.integration
def test_a_served_encoder_is_judged_by_cosine_against_the_torch_reference(served_embeddings):
    runs, outputs = served_embeddings
    reference, served = runs["embed-batch8"], runs["served-embed-c4"]
    assert reference.data.tags[schema.STATUS] == "accepted", outputs["embed-batch8"]
    assert served.data.tags[schema.STATUS] == "accepted", outputs["served-embed-c4"]
    metrics = served.data.metrics
    assert metrics["cosine_min"] >= 0.9999 and metrics["expected_ids"] == metrics["observed_ids"] == 30
    assert reference.info.run_id in checks_of(served)["reference_cosine"]
    # the texts cut where torch truncates them: the server read exactly the tokens the reference read
    assert metrics[TOKENS_INPUT] == reference.data.metrics[TOKENS_INPUT] > 0
    assert {"load_s", "warmup_s", "pass_s", "server_start_s"} <= set(metrics)
    assert metrics["server_start_s"] <= metrics["load_s"]
    assert served.data.params["setting.endpoint.api"] == "embeddings"
    assert served.data.params["setting.endpoint.concurrency"] == "4"
    facts = schema.run_facts(served)
    assert facts[schema.ENDPOINT].startswith("served by the pass · ") and schema.ENDPOINT_FAILED not in facts
    assert facts[f"{schema.MISSING_PREFIX}{USEFUL_FLOP_PER_S}"] == endpoint_client.NOT_COUNTED
