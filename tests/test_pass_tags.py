"""A pass's tags in the MLflow UI: what changes or is filtered on, at most 8 short `gpucost.*` chips; what never
changes (where and how it ran, what it could not measure) is a param; check details live in verdict.json.
Passes recorded before this layout read the same."""

from __future__ import annotations

import pytest
from mlflow.entities import Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.judging.verdicts import Check, outcomes, summary
from gpucost_mlflow.core.measurement import energy
from gpucost_mlflow.tracking import descriptions, exclusion_record, schema, writer
from gpucost_mlflow.tracking.reader import attempt_row
from gpucost_mlflow.tracking.run_records import RunRecord

pytestmark = pytest.mark.unit

CHECKS = [Check("ids", True, "exactly the 30 expected ids"), Check("format", True, "every line has id and label"),
          Check("coverage", True, "30 of 30"), Check("quality", False, "macro_f1 0.21 below 0.5"),
          Check("reference_agreement", True, "labels agree with reference run abc on 97 %")]
BUDGET = 8


def _campaign_pass_tags() -> tuple[dict[str, str], dict[str, str]]:
    """Every tag a campaign pass's launcher composes (start, slot, outcome, flags, energy, spool), parted as the
    record parts them: (tags, params)."""
    tags = writer.start_tags(role="benchmark", variant="batch8-bf16",
                             basis=writer.Basis("NVIDIA H200", "cuda", "f" * 64, "d" * 64), campaign_id="c0ffee",
                             pass_index="7", main_metric="macro_f1",
                             extra={schema.ROUND: 2, schema.POSITION: 3, schema.SLOT: "r2p3", schema.ATTEMPT: 2,
                                    schema.RETRY_OF: "0" * 32, schema.CACHE_POLICY: "warm", schema.EXPORTED: "x.gz"})
    _, outcome = writer.outcome_batch(status="rejected", reason="quality: macro_f1 0.21 below 0.5",
                                      metrics={"pass_s": 2.0, "completed_entries": 30}, quality_verdict="failed: quality",
                                      memory_counter="torch.cuda peak", checks=CHECKS,
                                      missing={"energy_j": "no counter", "mfu_useful": "no peak"})
    tags.update({tag.key: tag.value for tag in outcome})
    tags.update({schema.CONTENDED: "other CPU 40 %", schema.THROTTLED: "power cap", schema.STARVED: "GPU busy 30 %",
                 energy.ENERGY_COUNTER_TAG: "nvml", energy.ENERGY_FLAG_TAG: "coarse", energy.DEVICE_UUID_TAG: "GPU-1",
                 schema.SYSTEM_METRICS_INTERVAL: "1", schema.SPOOL_ID: "s" * 32})
    return schema.split_facts(tags)


def test_a_pass_shows_at_most_8_short_gpucost_tags_even_rejudged_overlapped_and_standing():
    tags, params = _campaign_pass_tags()
    del tags[schema.HEARTBEAT]  # publishing the attempt removes it (tracking/spool.py)
    tags.update({schema.STANDING: "runner-up", schema.OVERLAPPED_WITH: "a" * 32,
                 schema.REJUDGED: descriptions.rejudged_tag("b" * 32, "pending", "2026-12-01T10:00:00+00:00")})
    shown = sorted(key for key in tags if key.startswith("gpucost."))
    assert len(shown) <= BUDGET, shown
    assert all(len(key) <= 24 for key in shown), shown
    assert not any(key.startswith(schema.CHECK_PREFIX) for key in tags)  # one checks line, details in verdict.json
    assert {schema.HOST, schema.DEVICE_NAME, schema.CAMPAIGN_ID, schema.SLOT, schema.THROTTLED,
            f"{schema.MISSING_PREFIX}energy_j", schema.SPOOL_ID} <= set(params)


def test_the_checks_line_names_failed_checks_first_and_reads_back():
    line = summary(CHECKS)
    assert line == "failed: quality · passed: ids, format, coverage, reference_agreement"
    assert outcomes(line) == {check.name: check.passed for check in CHECKS}
    assert summary([]) == "" and outcomes("") == {}


def test_an_exclusion_is_one_tag_and_reads_back_as_the_six_it_replaces():
    value = exclusion_record.encoded({"cause": "another job", "by": "ana", "at": "2026-12-01T10:00:00+00:00",
                                      "status_before": "accepted", "reason_before": "every check passed"})
    found = exclusion_record.details({schema.EXCLUSION: value})
    assert found["cause"] == "another job" and found["status_before"] == "accepted" and found["undone"] == ""
    old = exclusion_record.details({schema.EXCLUDED_CAUSE: "another job", schema.STATUS_BEFORE_EXCLUSION: "accepted"})
    assert old["cause"] == "another job" and old["status_before"] == "accepted"


def test_a_pass_recorded_with_every_fact_as_a_tag_reads_as_one_recorded_now(store):
    """Stores written before facts became params keep their passes: the attempts table reads both alike."""
    client = MlflowClient()
    experiment_id = client.create_experiment("layouts")
    tags, params = _campaign_pass_tags()
    tags[schema.STATUS] = "accepted"
    now = client.create_run(experiment_id, tags=tags, start_time=1_764_489_600_000)
    client.log_batch(now.info.run_id, params=[Param(key, value) for key, value in params.items()])
    before = {key: value for key, value in {**tags, **params}.items() if key != schema.CHECKS}
    before.update({f"{schema.CHECK_PREFIX}{c.name}": f"{'pass' if c.passed else 'fail'}: {c.reason}" for c in CHECKS})
    before.update({schema.IDS_MATCH: "true", schema.CORPUS_ACCEPTED: "true"})
    old = client.create_run(experiment_id, tags=before, start_time=1_764_489_600_000)
    for run in (now, old):
        client.log_batch(run.info.run_id, tags=[RunTag(schema.NOTE, "n")])
        client.set_terminated(run.info.run_id, "FINISHED", end_time=1_764_489_700_000)
    rows = [attempt_row(RunRecord.of(client.get_run(run.info.run_id))) for run in (now, old)]
    for row in rows:
        row.pop("run_id")
        row["notes"] = row["notes"].split("; predictions: ")[0]
    assert rows[0] == rows[1]
    assert rows[0]["host"] and rows[0]["device"] == "NVIDIA H200" and rows[0]["ids_match"] and rows[0]["throttled"]


def test_rejudging_reads_the_checks_from_verdict_json_or_from_an_older_pass_tags():
    from gpucost_mlflow.core.judging.pass_verdict import PassVerdict
    from gpucost_mlflow.tracking.rejudge import _checks

    recorded = PassVerdict.from_record({"checks": [check.record() for check in CHECKS]})
    assert _checks(recorded, {}) == CHECKS
    older = {f"{schema.CHECK_PREFIX}ids": "pass: exactly the 30 expected ids", schema.CHECKS: "passed: ids"}
    assert _checks(PassVerdict.from_record({}), older) == [Check("ids", True, "exactly the 30 expected ids")]


def test_a_pass_with_more_params_than_one_log_batch_takes_records_them_all(store, tmp_path):
    from gpucost_mlflow.tracking import limits, pass_run

    client = MlflowClient()
    run_id = client.create_run(client.create_experiment("many")).info.run_id
    params = {f"{schema.SETTING_PREFIX}knob_{i}": str(i) for i in range(limits.BATCH["params"] + 20)}
    kept, facts = _campaign_pass_tags()
    tags = {**kept, **facts}  # as the launcher gives them: record_start parts them
    dataset = pass_run.dataset_fields([{"id": "1", "text": "t", "label": "a", "bucket": "short"}], "c.jsonl", "d" * 16)
    pass_run.record_start(client, run_id, params, tags, [], dataset)
    logged = client.get_run(run_id).data
    assert set(params) <= set(logged.params) and logged.params[schema.HOST] and schema.HOST not in logged.tags


def test_the_newest_run_of_a_fact_is_found_in_either_layout(store):
    from gpucost_mlflow.tracking import search

    client = MlflowClient()
    experiment_id = client.create_experiment("newest")
    older = client.create_run(experiment_id, tags={schema.CORPUS_FINGERPRINT: "f"}, start_time=1_000).info.run_id
    newer = client.create_run(experiment_id, start_time=2_000).info.run_id
    client.log_param(newer, schema.CORPUS_FINGERPRINT, "f")
    assert search.newest_by_fact(client, experiment_id, schema.CORPUS_FINGERPRINT, "f").info.run_id == newer
    assert [run.info.run_id for run in search.by_fact(client, experiment_id, schema.CORPUS_FINGERPRINT, "f")] == \
        [older, newer]
    assert search.newest_by_fact(client, experiment_id, schema.CORPUS_FINGERPRINT, "g") is None


def test_a_logged_measurement_keeps_five_significant_digits_counts_whole_and_epoch_bounds_to_the_millisecond():
    metrics, _ = writer.outcome_batch(status="accepted", reason="", quality_verdict="passed", metrics={
        "pass_s": 9.281454475, "tokens_input": 123_456, "mfu_useful": 0.0123456789, "lap_s@2": 4.56789123,
        "measured_from_epoch_s": 1_764_700_000.123456, "completed_entries": 30})
    logged = {(m.key, m.step): m.value for m in metrics}
    assert logged[("pass_s", 0)] == 9.2815 and logged[("lap_s", 2)] == 4.5679
    assert logged[("tokens_input", 0)] == 123_456 and logged[("mfu_useful", 0)] == 0.012346
    assert logged[("measured_from_epoch_s", 0)] == 1_764_700_000.123
    assert logged[("inputs_per_s", 0)] == 3.2323  # the rate of the unrounded pass_s (3.23225...), then five digits
