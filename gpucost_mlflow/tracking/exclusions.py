"""Excluding a pass for a documented external cause, and undoing it (`gpucost exclude`, PROTOCOL.md §6).

Only a timing can suffer an external disturbance: an accepted or pending pass may be excluded, a rejected or
failed one (a check or quality verdict, out of memory, a crash, an interruption) is a result and is refused.
The pass keeps its row: its status becomes `excluded`, and its reason (one of a fixed list,
core/judging/exclusion_reasons.py) with its note as the cause, who (the OS user) and when (UTC) are written, in one
JSON tag (`gpucost.exclusion`), beside the status and reason it had, which `undo` restores exactly; passes excluded
before that tag existed carry the same fields as tags of their own, read here too. Each change is one log_batch, so a
pass is never half excluded; raw metrics are never touched. The report leaves excluded attempts out of durations,
medians and feasibility (report/tables.py, core/money/decision.py), lists every exclusion of the experiment per
variant, and warns when passes with one flag were excluded for one variant and kept for another
(report/excluded_alike.py), so one can see whether one rule was applied to all.
"""

from __future__ import annotations

import datetime as dt
import getpass
from dataclasses import replace

import yaml
from mlflow.entities import Run, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import MESSAGE_LIMIT, GpucostError
from gpucost_mlflow.core.inputs import yaml_text
from gpucost_mlflow.core.judging.exclusion_reasons import ExclusionReason, reason_of
from gpucost_mlflow.core.judging.status import EXCLUDABLE, Status, excludable_failure, interrupted
from gpucost_mlflow.tracking import limits, schema, search, writer
from gpucost_mlflow.tracking.exclusion_record import Exclusion, details, encoded
from gpucost_mlflow.tracking.run_records import RunRecord

EXCLUDED = Status.EXCLUDED


# A cause fits the exclusion's tag with the pass's own reason beside it.
CAUSE_LIMIT = limits.TAG_VALUE // 2


def user() -> str:
    """Who excludes: the OS user, 'unknown' when it cannot be told."""
    try:
        return getpass.getuser() or "unknown"
    except Exception:  # noqa: BLE001 - no login name, no USER / LOGNAME in the environment
        return "unknown"


def describe(tags: dict) -> str:
    """The reason an excluded pass shows in the attempts table: its cause, who excluded it and when."""
    found = details(tags)
    return f"{found.cause} (excluded by {found.by or 'unknown'} at {found.at or 'unknown time'})"


def of(run: Run) -> Exclusion:
    """The pass's exclusion as recorded, with the pass it belongs to."""
    tags = schema.run_facts(run)
    return replace(details(tags), run_id=run.info.run_id, experiment_id=run.info.experiment_id,
                   variant=tags.get(schema.VARIANT, ""), device=tags.get(schema.DEVICE_NAME, ""))


def checked(reason: str | None, note: str | None = None) -> ExclusionReason:
    """The reason and note as given, checked before anything is read or written (a one-line GpucostError)."""
    return reason_of(reason, note, CAUSE_LIMIT)


def _pass(client: MlflowClient, run_id: str) -> Run:
    """The gpucost pass with this run id, or a one-line GpucostError."""
    run_id = (run_id or "").strip()
    if not run_id:
        raise GpucostError("a run id is required; nothing changed")
    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "NOT_FOUND"):
            raise
        raise GpucostError(f"run '{run_id}' not found in the tracking store; nothing changed") from None
    if run.info.lifecycle_stage == "deleted":
        raise GpucostError(f"run '{run_id}' is deleted; nothing changed")
    if not run.data.tags.get(schema.VARIANT):
        raise GpucostError(f"run '{run_id}' is not a gpucost pass (no {schema.VARIANT} tag); nothing changed")
    return run


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def exclude(client: MlflowClient, run_id: str, reason: str, note: str = "", who: str | None = None) -> Exclusion:
    """Mark the pass excluded for the reason (one of exclusion_reasons.REASONS) and its note (one log_batch); the
    status and reason it had are kept for undo."""
    why = checked(reason, note)
    cause = why.line()
    run = _pass(client, run_id)
    tags = schema.run_facts(run)
    status = tags.get(schema.STATUS, "")
    if status == EXCLUDED:
        raise GpucostError(f"run '{run.info.run_id}' is already excluded ({describe(tags)}); undo it first with "
                           f"`gpucost exclude {run.info.run_id} --undo`; nothing changed")
    _refuse_results(run)
    recorded = encoded({"cause": cause, "reason": why.reason, "note": why.note, "by": who or user(), "at": _now(),
                        "status_before": status, "reason_before": tags.get(schema.STATUS_REASON, "")})
    if len(recorded) > limits.TAG_VALUE:
        raise GpucostError(f"the note and the pass's reason are {len(recorded)} characters together, at most "
                           f"{limits.TAG_VALUE}; shorten the note; nothing changed")
    batch = {schema.STATUS: str(EXCLUDED), schema.STATUS_REASON: cause, schema.EXCLUSION: recorded}
    metrics, note = writer.restated({**tags, **batch}, dict(run.data.metrics))
    client.log_batch(run.info.run_id, metrics=metrics, tags=[RunTag(key, value) for key, value in batch.items()] + note)
    return of(client.get_run(run.info.run_id))


def _refuse_results(run: Run) -> None:
    """Refuse a pass that is not an accepted or pending one, with its status as the attempts table reads it
    (a run left RUNNING is still running, or failed: interrupted once its launcher or heartbeat is gone)."""
    from gpucost_mlflow.tracking.reader import attempt_row  # the reader imports this module

    row = attempt_row(RunRecord.of(run))
    status, reason, run_id = row["status"], row["reason"][:MESSAGE_LIMIT], run.info.run_id
    if status in EXCLUDABLE:
        return
    if (status == Status.FAILED and excludable_failure(reason, row.get("contended", ""))
            and not interrupted(status, reason)):
        return
    if status == Status.RUNNING:
        raise GpucostError(f"run '{run_id}' is still running (launcher "
                           f"{schema.run_facts(run).get(schema.LAUNCHER, '?')}): exclude it once it has ended; nothing "
                           "changed")
    if status in (Status.REJECTED, Status.FAILED):
        said = "was rejected" if status == Status.REJECTED else "failed"
        raise GpucostError(f"run '{run_id}' {said} ({reason or 'no reason recorded'}): a quality or failure verdict is "
                           "a result, not an external disturbance; exclusion applies to timings, and to failures "
                           "caused from outside (a kill by a signal, a contended pass); nothing changed")
    raise GpucostError(f"run '{run_id}' has status '{status or 'not recorded'}': only an accepted or pending pass's "
                       "timing may be excluded; nothing changed")


def undo(client: MlflowClient, run_id: str, who: str | None = None) -> Exclusion:
    """Restore the status and reason the pass had before its exclusion (one log_batch); returns what was undone."""
    run = _pass(client, run_id)
    tags = schema.run_facts(run)
    status = tags.get(schema.STATUS, "")
    if status != EXCLUDED:
        raise GpucostError(f"run '{run.info.run_id}' is not excluded (status {status or 'not recorded'}): nothing to "
                           "undo")
    if not details(tags).status_before:
        raise GpucostError(f"run '{run.info.run_id}' has no recorded status before its exclusion (not excluded by "
                           "`gpucost exclude`): nothing to restore; nothing changed")
    undone = of(run)
    trace = (f"exclusion by {undone.by} at {undone.at} undone by {who or user()} at {_now()} "
             f"(cause was: {undone.cause})")[:CAUSE_LIMIT + 200]
    batch = [RunTag(schema.STATUS, undone.status_before), RunTag(schema.STATUS_REASON, undone.reason_before),
             RunTag(schema.EXCLUSION, encoded({"undone": trace}))]
    metrics, note = writer.restated({**tags, **{tag.key: tag.value for tag in batch}}, dict(run.data.metrics))
    client.log_batch(run.info.run_id, metrics=metrics, tags=batch + note)
    return undone


def listed(client: MlflowClient, experiment_id: str) -> list[Exclusion]:
    """Every excluded pass of the experiment, oldest first."""
    found = search.all_runs(client, experiment_id, f"tags.`{schema.STATUS}` = '{EXCLUDED}'")
    return [of(run) for run in found if run.data.tags.get(schema.VARIANT)]


def rule(client: MlflowClient, experiment_id: str) -> str:
    """The exclusion_rule of the protocol locked on the experiment ('' when its text is not stored there)."""
    text = client.get_experiment(experiment_id).tags.get(schema.PROTOCOL_TEXT, "")
    try:
        document = yaml_text.safe_load(text) if text else None
    except yaml.YAMLError:
        return ""
    value = document.get("exclusion_rule") if isinstance(document, dict) else None
    return " ".join(value.split()) if isinstance(value, str) else ""
