"""The local spool: every finished pass is written here first, then published to the tracking store.

A pass whose store went away during or after its measured pass stays in the spool with its
original timings and timestamps; `gpucost sync` publishes it later. Publishing is idempotent:
it completes the run the pass opened (or, if the store lost it, one run found or created by the
entry's spool id), so running sync twice never makes a second row.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse, urlunparse

from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.tracking import limits, schema, search

ENV = "GPUCOST_SPOOL"
RECORD = "record.json"
ARTIFACTS = "artifacts"


def spool_dir() -> Path:
    """$GPUCOST_SPOOL, else $XDG_DATA_HOME/gpucost/spool (~/.local/share/gpucost/spool): kept across reboots."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gpucost" / "spool"


def public_uri(uri: str) -> str:
    """The tracking URI without user:password, the only form a spool record or message may hold."""
    parsed = urlparse(uri)
    if parsed.username is None and parsed.password is None:
        return uri
    host = parsed.hostname or ""
    if parsed.port:
        host += f":{parsed.port}"
    return urlunparse(parsed._replace(netloc=host))


@dataclass
class Entry:
    """One spooled pass: its folder holds record.json and the files to log as artifacts."""

    folder: Path
    record: dict

    @property
    def name(self) -> str:
        return self.folder.name

    def describe(self) -> str:
        r = self.record
        return (f"{self.name}: {r['tags'].get(schema.VARIANT, '?')} pass, status {r['tags'].get(schema.STATUS, '?')}, "
                f"run {r['run_id']}")


def write(record: dict, files: list[Path], root: Path | None = None) -> Entry:
    """Write one pass atomically (a temporary folder renamed into place): all of it or nothing."""
    root = root or spool_dir()
    root.mkdir(parents=True, exist_ok=True)
    record = dict(record, spool_id=record.get("spool_id") or uuid.uuid4().hex)
    final = root / f"{record['start_time']}-{record['run_id'] or record['spool_id']}"
    temp = root / f".writing-{record['spool_id']}"
    (temp / ARTIFACTS).mkdir(parents=True, exist_ok=True)
    names = []
    for path in files:
        if path.exists():
            shutil.copy2(path, temp / ARTIFACTS / path.name)
            names.append(path.name)
    record["artifacts"] = names
    with open(temp / RECORD, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, final)
    return Entry(final, record)


def entries(root: Path | None = None) -> list[Entry]:
    """Complete spooled passes, oldest first (half-written folders are ignored)."""
    root = root or spool_dir()
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(root.iterdir()):
        if folder.name.startswith(".") or not (folder / RECORD).is_file():
            continue
        try:
            found.append(Entry(folder, json.loads((folder / RECORD).read_text(encoding="utf-8"))))
        except ValueError:
            raise GpucostError(f"{folder / RECORD}: not valid JSON; move it aside and run sync again") from None
    return found


def of_campaign(campaign_id: str, root: Path | None = None) -> list[Entry]:
    """The spooled passes of one campaign (its id is a fact: a param now, a tag in entries spooled before)."""
    return [entry for entry in entries(root)
            if schema.facts(entry.record["tags"],
                            entry.record.get("params", {})).get(schema.CAMPAIGN_ID) == campaign_id]


def _experiment_id(client: MlflowClient, record: dict) -> str:
    experiment = client.get_experiment_by_name(record["experiment_name"])
    if experiment is not None:
        return experiment.experiment_id
    try:
        return client.create_experiment(record["experiment_name"])
    except MlflowException:
        return client.get_experiment_by_name(record["experiment_name"]).experiment_id


def _find_run(client: MlflowClient, record: dict) -> tuple[str, bool]:
    """(run id, whether it had to be created): the run the pass opened, or the one sync made before."""
    if record.get("run_id"):
        try:
            client.get_run(record["run_id"])
            return record["run_id"], False
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise
    experiment_id = _experiment_id(client, record)
    found = search.newest_by_fact(client, experiment_id, schema.SPOOL_ID, record["spool_id"])
    if found is not None:
        return found.info.run_id, False
    # The spool id goes in with the run (a tag: create_run takes no params), so a sync that dies right after
    # creating it finds this run the next time instead of making a second one; publish adds it as a param.
    tags = dict(record["tags"], **{schema.SPOOL_ID: record["spool_id"]})
    if record.get("parent_run_id"):
        tags[schema.PARENT_RUN_ID] = record["parent_run_id"]
    run = client.create_run(experiment_id, start_time=record["start_time"], tags=tags, run_name=record.get("run_name"))
    return run.info.run_id, True


def publish(client: MlflowClient, entry: Entry, *, opened: bool = False) -> str:
    """Upload one spooled pass with its original timestamps, its params, tags and metrics in as few log_batch calls
    as MLflow takes; safe to repeat. `opened`: the launcher publishing the run it opened itself, which needs no
    looking up. Returns the run id."""
    record = entry.record
    run_id, created = (record["run_id"], False) if opened and record.get("run_id") else _find_run(client, record)
    params = [Param(key, value) for key, value in {**record["params"], schema.SPOOL_ID: record["spool_id"]}.items()]
    tags = [RunTag(key, value) for key, value in record["tags"].items()]
    metrics = [Metric(key, value, timestamp, step) for key, value, timestamp, step in record["metrics"]]
    for some_params, some_tags, some_metrics in limits.together(params, tags, metrics):
        client.log_batch(run_id, metrics=some_metrics, params=some_params, tags=some_tags)
    if created and record.get("dataset"):
        dataset = Dataset(**record["dataset"])
        context = InputTag(schema.DATASET_CONTEXT_TAG, schema.DATASET_CONTEXT)
        client.log_inputs(run_id, [DatasetInput(dataset, tags=[context])])
    for name in record["artifacts"]:
        client.log_artifact(run_id, str(entry.folder / ARTIFACTS / name))
    client.set_terminated(run_id, record["end_status"], end_time=record["end_time"])
    _drop_heartbeat(client, run_id)
    return run_id


def _drop_heartbeat(client: MlflowClient, run_id: str) -> None:
    """Remove the finished run's heartbeat: only a running pass's sign of life is read (gone already on a repeat)."""
    try:
        client.delete_tag(run_id, schema.HEARTBEAT)
    except MlflowException as exc:
        if exc.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "NOT_FOUND"):
            raise


def remove(entry: Entry) -> None:
    """Drop an entry once the store holds it."""
    shutil.rmtree(entry.folder, ignore_errors=True)


def publish_and_remove(client: MlflowClient, entry: Entry, *, opened: bool = False) -> str:
    """Publish one spooled pass, then drop it from the spool: only once the store holds all of it. Returns the run id;
    an error (store.is_store_error tells which are the store's) leaves the entry for the next `gpucost sync`."""
    run_id = publish(client, entry, opened=opened)
    remove(entry)
    return run_id


def publish_campaign(client: MlflowClient, campaign_id: str, root: Path | None = None) -> list[str]:
    """Publish and drop every spooled pass of one campaign (a relaunched fleet job's first step, where the lost
    machine's disk survived it): those passes were measured to their end, so they count and their slots do not run
    again. Returns their run ids; other campaigns' entries stay."""
    return [publish_and_remove(client, entry) for entry in of_campaign(campaign_id, root)]
