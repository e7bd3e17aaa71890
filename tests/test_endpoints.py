"""Endpoints as variants (issue 53, docs/engines.md): the corpus sent to an OpenAI-compatible server through the
`openai` client, timed, judged and recorded like every pass. The server is a real `transformers serve`, started by
the pass itself on a free port with the packaged SmolLM2 model, on this CPU and offline; the reference is the same
model's fp32 torch pass.
"""

from __future__ import annotations

import csv
import json
import secrets
from decimal import Decimal
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import read_declaration
from gpucost_mlflow.core.kinds import endpoint
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.workloads import endpoint_client
from gpucost_mlflow.workloads.generation import with_openai
from tests.helpers import VARIANTS, checks_of
from tests.test_generation import generation_slice  # noqa: F401 - the 16-prompt slice and its protocol

KEY_VARIABLE = "GPUCOST_TEST_ENDPOINT_KEY"
SERVE = "transformers serve {model} --port {port} --device cpu"
DEFAULTS = """defaults: {batch_size: 8, precision: fp32, quantization: none, compile: false, attention: sdpa,
  padding: longest, max_length: 256, length_grouping: none, device: auto}
"""
TEST_VARIANTS = DEFAULTS + f"""
variants:
  gen-batch8: {{batch_size: 8, workload: generation}}
  hosted-short:
    batch_size: 8
    workload: generation
    engine: openai
    max_new_tokens: 4
    endpoint: {{base_url: "https://api.example.com/v1", model: smollm2-135m}}
  hosted:
    batch_size: 8
    workload: generation
    engine: openai
    endpoint: {{base_url: "https://api.example.com/v1", model: smollm2-135m, api_key_env: {KEY_VARIABLE}}}
  never-up:
    batch_size: 8
    workload: generation
    engine: openai
    endpoint: {{serve: "python -c 'import time; time.sleep(60)' {{port}}", serve_timeout_s: 2}}
"""
RUNNING = """  running-c{concurrency}:
    batch_size: 8
    workload: generation
    engine: openai
    endpoint: {{base_url: "{url}", model: "{model}", concurrency: {concurrency}, api_key_env: {key}}}
"""


@pytest.mark.unit
@pytest.mark.parametrize(("declared", "message"), [
    ({"model": "m"}, "needs base_url (a running server) or serve"),
    ({"model": "m", "base_url": "ftp://x"}, "is not an http(s) URL"),
    ({"model": "m", "serve": "vllm serve m"}, "must place the server on {port}"),
    ({"model": "m", "base_url": "http://h/v1", "concurrency": 0}, "endpoint.concurrency must be a whole number >= 1"),
    ({"model": "m", "base_url": "http://h/v1", "api_key_env": "sk-live abc"}, "not its value"),
    ({"model": "m", "base_url": "http://h/v1", "temperature": 1}, "unknown field(s) temperature"),
])
def test_a_bad_endpoint_is_refused_in_one_line(declared, message):
    with pytest.raises(GpucostError, match=message.replace("(", r"\(").replace(")", r"\)")) as found:
        endpoint.parse(declared, "variants.yaml: variant 'x'")
    assert "\n" not in str(found.value)


@pytest.mark.unit
def test_an_endpoint_belongs_to_the_openai_engine_and_the_openai_engine_needs_one(tmp_path):
    path = tmp_path / "variants.yaml"
    path.write_text(DEFAULTS + "variants:\n  x: {workload: generation, engine: openai}\n")
    with pytest.raises(GpucostError, match="declare endpoint"):
        read_declaration(path)
    path.write_text(DEFAULTS + "variants:\n  x: {workload: generation, endpoint: {model: m, base_url: 'http://h/v1'}}\n")
    with pytest.raises(GpucostError, match="endpoint is for engine openai, not torch"):
        read_declaration(path)


@pytest.mark.unit
def test_the_shipped_endpoint_variants_start_their_own_server_and_record_no_key():
    served = read_declaration(VARIANTS).variant("served-gen-c8").settings
    assert served.engine == "openai" and served.endpoint.concurrency == 8 and "{port}" in served.endpoint.serve
    record = served.record()["endpoint"]
    assert record["api_key_env"] == "" and "api_key" not in record
    assert type(served).from_record(served.record()) == served  # the record reads back as the same settings


@pytest.mark.unit
def test_the_endpoint_identity_names_host_model_and_server_version():
    running = endpoint.parse({"model": "Qwen/Qwen3-8B", "base_url": "http://10.0.0.5:8000/v1"}, "v")
    assert endpoint_client.identity(running, running.url, "Qwen/Qwen3-8B", ["Qwen/Qwen3-8B"], "0.11.0") == (
        "10.0.0.5:8000 · Qwen/Qwen3-8B · server 0.11.0")
    with pytest.raises(GpucostError, match="not among the models the server lists: other"):
        endpoint_client.identity(running, running.url, "Qwen/Qwen3-8B", ["other"], "")


def _running_server(folder: Path) -> tuple:
    """`transformers serve` on the packaged SmolLM2's dequantised folder (the reference pass wrote it), started as a
    user starts a server: (the server, its base URL, the model id it lists)."""
    from gpucost_mlflow.core.inputs import sources
    from gpucost_mlflow.core.inputs.fingerprints import sha256_file
    from gpucost_mlflow.execution import serving
    from gpucost_mlflow.workloads.generation import child

    model = child.cache_folder(sha256_file(sources.package_path(*sources.DEFAULT_GENERATION_PACKAGE)))
    server, url = serving.start(SERVE, str(model), endpoint.SERVED_URL, folder / "running-server.log", 300)
    return server, url, str(model)


@pytest.fixture(scope="module")
def served_store(tmp_path_factory, generation_slice, migrated_store):  # noqa: F811 - the imported fixture
    """One store: the fp32 torch reference, a server that never comes up, then the model served by `transformers
    serve` at 8 and 1 requests in flight, every endpoint pass with an API key set; the report over them."""
    from tests.helpers import use_store
    from tests.kept import CACHE

    corpus, sliced = generation_slice
    folder = tmp_path_factory.mktemp("endpoints")
    protocol = folder / "protocol.yaml"  # the slice's, its window placed when the report is read
    protocol.write_text(sliced.read_text(encoding="utf-8").replace('deadline: "2026-12-04T09:00:00+01:00"', (
        # a deadline no loaded CPU misses: the decision here is about prices, not time
        "deadline: 2000h\nplan: {start: at_report, setup_hours: 0.5, waiting_hours: 0, planned_restarts: 0}")).replace(
        "expected: 1,", "expected: 20000,"), encoding="utf-8")  # 320,000 inputs: hours of this CPU, cents per token
    variants = folder / "variants.yaml"
    variants.write_text(TEST_VARIANTS, encoding="utf-8")
    key = f"sk-test-{secrets.token_hex(12)}"
    outputs = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_store(folder, monkeypatch, migrated_store)
        monkeypatch.setenv("GPUCOST_MODEL_CACHE", str(CACHE / "models"))  # SmolLM2 dequantised once per venv
        monkeypatch.setenv(KEY_VARIABLE, key)
        run = ["pass", "--corpus", str(corpus), "--variants", str(variants), "--experiment", "endpoints",
               "--protocol", str(protocol), "--variant"]
        for variant in ("gen-batch8", "never-up"):
            outputs[variant] = CliRunner().invoke(main, [*run, variant]).output
        # One server started here, as a user starts one (a `serve` variant's own start is the embeddings test's and
        # never-up's): both concurrencies ask it through its base_url.
        server, url, model = _running_server(folder)
        try:
            variants.write_text(TEST_VARIANTS + "".join(RUNNING.format(url=url, model=model, concurrency=n,
                                                                       key=KEY_VARIABLE) for n in (8, 1)),
                                encoding="utf-8")
            for variant in ("running-c8", "running-c1"):
                outputs[variant] = CliRunner().invoke(main, [*run, variant]).output
        finally:
            server.stop()
        outputs["report"] = _report(folder, protocol, variants)
        client = MlflowClient()
        runs = {run.data.tags[schema.VARIANT]: run for run in
                client.search_runs([mlflow.get_experiment_by_name("endpoints").experiment_id],
                                   "params.`gpucost.role` = 'benchmark'")}
        yield folder, client, runs, outputs, key
        mlflow.set_tracking_uri(None)


PER_TOKEN = """provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,billing,\
price_per_million_input,price_per_million_output,tier,completion_window_hours,as_of
hosted,hosted-2026-12-03,this-machine,{device},1,,,USD,example price: not a quote,per_token,0.10,0.40,list,,2026-12-03
hosted,hosted-2026-12-03,this-machine,{device},1,,,USD,example price: not a quote,per_token,0.05,0.20,batch,24,2026-12-03
"""


def _report(folder: Path, protocol: Path, variants: Path) -> str:
    """The report over the passes, each configuration priced as a rental of this machine (`gpucost catalog example`);
    a hosted list and batch tier naming this machine are what-ifs beside it, never a price of its work."""
    rental = folder / "this-machine.csv"
    made = CliRunner().invoke(main, ["catalog", "example", "--out", str(rental), "--price-per-hour", "1.00"])
    assert made.exit_code == 0, made.output
    device = next(csv.DictReader(rental.open(encoding="utf-8")))["device_names"]
    hosted = folder / "hosted.csv"
    hosted.write_text(PER_TOKEN.format(device=device), encoding="utf-8")
    result = CliRunner().invoke(main, ["report", "--experiment", "endpoints", "--protocol", str(protocol),
                                       "--variants-file", str(variants), "--catalog", str(rental), "--catalog",
                                       str(hosted), "--out", str(folder / "report"), "--no-log"])
    assert result.exit_code == 0, result.output
    return result.output


def _a_model_served_here_is_rented_never_committed_at_the_hosted_tiers_that_name_this_machine(served_store):
    folder, _, _, outputs, _ = served_store
    balance = {row["variant"]: row for row in csv.DictReader((folder / "report" / "balance.csv").open(encoding="utf-8"))}
    served = balance["running-c8"]
    page = (folder / "report" / "report.md").read_text(encoding="utf-8")
    # The server ran on this machine: its work is this machine's, priced by renting it (320,000 inputs, hours of this
    # CPU at 1.00 USD an hour). The hosted tiers naming this machine are what-ifs, never committed (issue 61).
    assert "this-machine hourly" in served["package"] and "tier" not in served["package"] + served["next_plans"], served
    assert float(served["committed_cost"]) > 0, served
    assert "**Pay per token:**" not in page and "decision" in outputs["report"].lower(), page[:3000]
    assert "### Hosted prices for work measured here (what-if)" in page
    assert "for running-c8 on " in page and "a what-if outside the choice, never committed" in page
    assert balance["never-up"]["committed_cost"] == ""


def _a_served_model_is_measured_judged_and_recorded_like_every_pass(served_store):
    _, _, runs, outputs, _ = served_store
    reference, c8, c1 = runs["gen-batch8"], runs["running-c8"], runs["running-c1"]
    assert reference.data.tags[schema.STATUS] == "accepted", outputs["gen-batch8"]
    for run in (c8, c1):  # judged against the torch reference with the same checks as every generation variant
        assert run.data.tags[schema.STATUS] == "accepted", outputs[run.data.tags[schema.VARIANT]]
        metrics = run.data.metrics
        assert metrics["reference_exact_match"] >= 0.9 and metrics["observed_ids"] == 16
        assert {"load_s", "warmup_s", "pass_s", "tokens_prompt", "tokens_generated"} <= set(metrics)
        assert 0 < metrics["tokens_generated"] <= 16 * 8  # from the responses' usage
        facts = schema.run_facts(run)
        assert facts[schema.DEVICE_NAME] == schema.run_facts(reference)[schema.DEVICE_NAME]  # this machine did it
    # A server already running: the pass starts none (no server_start_s), and its identity is the server's host.
    assert "server_start_s" not in c1.data.metrics and "server_start_s" not in c8.data.metrics
    assert schema.run_facts(c8)[schema.ENDPOINT] == schema.run_facts(c1)[schema.ENDPOINT]
    assert schema.run_facts(c1)[schema.ENDPOINT].startswith("127.0.0.1:")
    assert (c8.data.params["setting.endpoint.concurrency"], c1.data.params["setting.endpoint.concurrency"]) == ("8", "1")
    for run in (c8, c1):
        facts = schema.run_facts(run)
        assert "prefill_s" not in run.data.metrics
        assert facts[f"{schema.MISSING_PREFIX}prefill_s"] == with_openai.NOT_SPLIT
        assert reference.info.run_id in checks_of(run)["reference_exact_match"]


def _an_endpoint_variant_asking_fewer_tokens_than_the_reference_is_not_comparable(served_store, generation_slice):  # noqa: F811
    """The provider's answers imported for a hosted variant that asks 4 new tokens where the reference asked 8."""
    folder, client, runs, _, _ = served_store
    imported = CliRunner().invoke(main, ["hosted", "batch-import", "--variant", "hosted-short", "--corpus",
                                         str(generation_slice[0]), "--variants", str(folder / "variants.yaml"),
                                         "--protocol", str(folder / "protocol.yaml"), "--experiment", "endpoints",
                                         "--results", str(_provider_output(runs["gen-batch8"], folder / "short.jsonl")),
                                         "--completed-in", "0.5"])
    assert "batch hosted-short: rejected" in imported.output, imported.output
    (short,) = client.search_runs([runs["gen-batch8"].info.experiment_id], "tags.`gpucost.variant` = 'hosted-short'")
    assert "not comparable with gen-batch8: max_new_tokens 4 against" in short.data.tags[schema.STATUS_REASON]


def _a_server_that_never_comes_up_is_a_failed_row_with_its_log(served_store):
    _, _, runs, outputs, _ = served_store
    down = runs["never-up"]
    assert down.data.tags[schema.STATUS] == "failed", outputs["never-up"]
    reason = down.data.tags[schema.STATUS_REASON]
    assert "did not answer /health within 2 s (endpoint.serve_timeout_s)" in reason, reason
    assert "pass_s" not in down.data.metrics


def _the_api_key_is_in_no_file_param_tag_artifact_or_printed_line(served_store):
    folder, _, runs, outputs, key = served_store
    assert all(key not in text for text in outputs.values())
    for run in runs.values():
        assert not any(key in value for value in (*run.data.params.values(), *run.data.tags.values()))
    leaked = [str(path) for path in folder.rglob("*") if path.is_file() and key.encode() in path.read_bytes()]
    assert not leaked, leaked
    assert (folder / "mlflow.db").exists() and any(folder.rglob("verdict.json"))  # the scan read the store


@pytest.mark.unit
def test_the_fleet_installs_the_servers_its_variants_start_and_passes_their_keys_as_secrets(tmp_path):
    from gpucost_mlflow.core.fleet import task

    path = tmp_path / "variants.yaml"
    path.write_text(DEFAULTS + f"""variants:
  vllm-served: {{workload: generation, engine: openai, endpoint: {{serve: "vllm serve {{model}} --port {{port}}"}}}}
  hosted: {{workload: generation, engine: openai, endpoint: {{model: m, base_url: "https://api.example.com/v1",
            api_key_env: {KEY_VARIABLE}}}}}
""")
    variants = read_declaration(path).variants
    assert task.server_extras(variants) == ("vllm",)
    assert task.server_extras(read_declaration(VARIANTS).variants) == ("serving",)
    with pytest.raises(GpucostError, match=f"read their API keys from {KEY_VARIABLE}, not set here"):
        task.endpoint_keys(variants, {})
    assert task.endpoint_keys(variants, {KEY_VARIABLE: "sk-x"}) == {KEY_VARIABLE: "sk-x"}
    machine = task.Machine(("aws",), False, "2.13.0", Decimal("0.5"), Decimal(2), ("vllm",))
    inputs = task.Inputs(*(tmp_path / name for name in ("w.whl", "c.jsonl", "model", "p.yaml", "v.yaml")))
    script = task.setup_script(task.Job("L4"), inputs, machine)
    assert "[gpu,team,vllm]" in script and "sk-x" not in script


def _provider_output(reference_run, path: Path, errors: int = 0, truncated: bool = False) -> Path:
    """The Batch API output file a provider would return: the model's own answers (the reference pass's export, the
    same model and greedy decoding), the first `errors` inputs answered with an error, or the last line cut off."""
    import gzip

    folder = Path(mlflow.artifacts.download_artifacts(run_id=reference_run.info.run_id, artifact_path="generations.jsonl.gz"))
    rows = [json.loads(line) for line in gzip.decompress(folder.read_bytes()).decode("utf-8").splitlines()]
    lines = []
    for number, row in enumerate(rows):
        if number < errors:
            lines.append({"id": f"batch_req_{number}", "custom_id": row["id"], "response": {"status_code": 500},
                          "error": {"code": "server_error", "message": "the model was overloaded"}})
            continue
        body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": row["text"]},
                             "finish_reason": "stop" if len(row["tokens"]) < 8 else "length"}],
                "usage": {"prompt_tokens": 80, "completion_tokens": len(row["tokens"]), "total_tokens": 88}}
        lines.append({"id": f"batch_req_{number}", "custom_id": row["id"],
                      "response": {"status_code": 200, "body": body}, "error": None})
    text = "".join(json.dumps(line) + "\n" for line in lines)
    path.write_text(text[:-40] if truncated else text, encoding="utf-8")
    return path


def _a_hosted_batch_tier_is_asked_by_a_batch_file_and_its_output_judged_and_recorded_as_a_pass(served_store,
                                                                                               generation_slice):  # noqa: F811
    folder, client, runs, _, _ = served_store
    corpus = generation_slice[0]
    common = ["--variant", "hosted", "--corpus", str(corpus), "--variants", str(folder / "variants.yaml"),
              "--protocol", str(folder / "protocol.yaml")]
    asked = CliRunner().invoke(main, ["hosted", "batch-file", *common, "--out", str(folder / "batch.jsonl")])
    assert asked.exit_code == 0, asked.output
    lines = [json.loads(line) for line in (folder / "batch.jsonl").read_text().splitlines()]
    assert len(lines) == 16 and {line["url"] for line in lines} == {"/v1/chat/completions"}
    assert all(line["body"]["max_tokens"] == 8 and line["body"]["temperature"] == 0 and
               line["body"]["model"] == "smollm2-135m" and "Review:" in line["body"]["messages"][0]["content"]
               for line in lines)
    reference = runs["gen-batch8"]
    imported = CliRunner().invoke(main, ["hosted", "batch-import", *common, "--experiment", "endpoints", "--results",
                                         str(_provider_output(reference, folder / "out.jsonl")), "--completed-in",
                                         "0.5"])
    assert imported.exit_code == 0 and "batch hosted: accepted" in imported.output, imported.output
    partial = CliRunner().invoke(main, ["hosted", "batch-import", *common, "--experiment", "endpoints", "--results",
                                        str(_provider_output(reference, folder / "out2.jsonl", errors=2)),
                                        "--completed-in", "0.5"])
    assert "batch hosted: rejected" in partial.output and "14 of 16 inputs" in partial.output, partial.output
    before = len(client.search_runs([reference.info.experiment_id]))
    cut = CliRunner().invoke(main, ["hosted", "batch-import", *common, "--experiment", "endpoints", "--results",
                                    str(_provider_output(reference, folder / "out3.jsonl", truncated=True)),
                                    "--completed-in", "0.5"])
    assert cut.exit_code == 2 and "not a JSON line (a truncated download?)" in cut.output, cut.output
    assert len(client.search_runs([reference.info.experiment_id])) == before  # nothing recorded from it
    hosted = client.search_runs([reference.info.experiment_id], "tags.`gpucost.variant` = 'hosted'",
                                order_by=["attributes.start_time ASC"])
    accepted = hosted[0]
    facts = schema.run_facts(accepted)
    assert accepted.data.metrics["pass_s"] == 1800.0 and accepted.data.metrics["reference_exact_match"] == 1.0
    assert facts[schema.DEVICE_NAME] == "endpoint api.example.com"
    assert facts[schema.ENDPOINT] == "api.example.com · smollm2-135m · batch tier"
    assert facts[f"{schema.MISSING_PREFIX}load_s"].startswith("a batch job")
    assert schema.run_facts(hosted[1])[schema.ENDPOINT_FAILED].startswith("2: ")


@pytest.mark.integration
@pytest.mark.ci_step  # 40 s alone, 3 to 4 min among make test's workers: its own CI step keeps make test in budget
def test_a_served_model_and_a_hosted_batch_tier_are_measured_judged_and_priced_like_every_configuration(
        served_store, generation_slice):  # noqa: F811
    """One test over the served store (a module fixture built once: with xdist, separate tests of this module would
    each build it on their own worker, starting its servers again)."""
    _a_served_model_is_measured_judged_and_recorded_like_every_pass(served_store)
    _an_endpoint_variant_asking_fewer_tokens_than_the_reference_is_not_comparable(served_store, generation_slice)
    _a_server_that_never_comes_up_is_a_failed_row_with_its_log(served_store)
    _a_model_served_here_is_rented_never_committed_at_the_hosted_tiers_that_name_this_machine(served_store)
    _a_hosted_batch_tier_is_asked_by_a_batch_file_and_its_output_judged_and_recorded_as_a_pass(served_store,
                                                                                               generation_slice)
    _the_api_key_is_in_no_file_param_tag_artifact_or_printed_line(served_store)  # last: over everything recorded
