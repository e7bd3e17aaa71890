"""An experiment holds one protocol: its digest is locked on the experiment, passes under another are refused."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.tracking import descriptions, limits, schema, store, ui


@dataclass(frozen=True)
class Experiment:
    """An experiment as one command reads it, once: its id, name and tags (the protocol locked on it, its views)."""

    id: str
    name: str
    tags: Mapping[str, str] = field(default_factory=dict)


def resolve(client: MlflowClient, name: str | None, *, create: bool) -> Experiment | None:
    """The experiment a command writes to: under `mlflow run` the run's experiment, else the named one (created when
    `create`; None when it does not exist and is not to be created)."""
    env_id = os.environ.get("MLFLOW_EXPERIMENT_ID") if os.environ.get("MLFLOW_RUN_ID") else None
    if env_id:
        return of(client.get_experiment(env_id))
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        if experiment.lifecycle_stage == "deleted":
            raise GpucostError(f"experiment '{name}' is deleted; restore it or choose another name")
        return of(experiment)
    if not create:
        return None
    tags = _presentation()
    try:
        return Experiment(client.create_experiment(name, tags=tags), name, tags)
    except MlflowException as exc:
        # Passes started at once on several machines: one creates the experiment, the others find it.
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
        return of(client.get_experiment_by_name(name))


def of(experiment) -> Experiment:
    """An MLflow experiment entity as the record a command reads: its id, name and tags."""
    return Experiment(experiment.experiment_id, experiment.name, dict(experiment.tags))


def name_of(experiment_id: str) -> str:
    """The name of the experiment MLFLOW_EXPERIMENT_ID names, so a command without --experiment uses the one `mlflow
    run` would; refused in one line when the store has none."""
    client = MlflowClient()
    try:
        return client.get_experiment(experiment_id).name
    except MlflowException as exc:
        if exc.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            raise
        raise GpucostError(f"MLFLOW_EXPERIMENT_ID={experiment_id}: no such experiment in "
                           f"{client.tracking_uri}") from None


def named(client: MlflowClient, name: str) -> Experiment:
    """The experiment of this name (its id, name and tags), or a one-line GpucostError naming the store."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        raise GpucostError(f"experiment '{name}' not found in {client.tracking_uri}")
    return of(experiment)


def locked_digest(client: MlflowClient, experiment_id: str) -> str:
    return client.get_experiment(experiment_id).tags.get(schema.PROTOCOL_DIGEST, "")


def lock(client: MlflowClient, experiment_id: str, name: str, protocol: Protocol, protocol_text: str) -> bool:
    """Store the protocol digest on the experiment; True when this call locked it, False when already locked to it.

    The experiment also gets its description from the protocol (question, quality bar, digest) unless it has one."""
    tags = client.get_experiment(experiment_id).tags
    current = tags.get(schema.PROTOCOL_DIGEST, "")
    if current == protocol.digest:
        _describe(client, experiment_id, tags, protocol)
        present(client, experiment_id, tags)
        return False
    if current:
        kept = shipped.locked_protocol(Path(protocol.path), current)
        where = f", or --protocol {kept} (-P protocol=...), the file it is locked to" if kept else ""
        raise GpucostError(
            f"experiment '{name}' is locked to protocol {current[:12]}, this file is {protocol.digest[:12]}: "
            f"a new protocol means a new experiment (use another --experiment{where})"
        )
    try:
        client.set_experiment_tag(experiment_id, schema.PROTOCOL_DIGEST, protocol.digest)
        client.set_experiment_tag(experiment_id, schema.PROTOCOL_PATH, protocol.path)
        if len(protocol_text) <= limits.EXPERIMENT_TAG_VALUE:
            client.set_experiment_tag(experiment_id, schema.PROTOCOL_TEXT, protocol_text)
    except MlflowException:
        # First passes started at once on several machines insert the same tag; the store keeps one.
        # Locked to this same protocol by another pass is fine; anything else is the original error.
        time.sleep(0.5)
        if locked_digest(client, experiment_id) != protocol.digest:
            raise
        return False
    _describe(client, experiment_id, tags, protocol)
    present(client, experiment_id, tags)
    return True


def _presentation() -> dict[str, str]:
    """The experiment tags that make MLflow's UI present it as gpucost reads it: a model-development experiment
    (not GenAI), with the saved view of its passes that the printed link opens (tracking/ui.py)."""
    return {schema.EXPERIMENT_KIND: schema.MODEL_DEVELOPMENT, **ui.views(int(time.time() * 1000))}


def priced_in(client: MlflowClient, experiment_id: str, currency: str) -> None:
    """gpucost's own views show the committed cost in the decision's currency (committed_eur): each one whose column
    names another is written again; a view the user renamed stands."""
    tags = client.get_experiment(experiment_id).tags
    for view in ui.outdated(tags, currency):
        key, value = ui.passes_view(int(time.time() * 1000), view, currency.lower())
        client.set_experiment_tag(experiment_id, key, value)


def present(client: MlflowClient, experiment_id: str, tags: dict | None = None) -> None:
    """Give an experiment the presentation tags it lacks, each written once: a kind or view already there stands
    (the user may have chosen it in the UI), so an experiment created before gpucost wrote them gets them too."""
    tags = client.get_experiment(experiment_id).tags if tags is None else tags
    for key, value in _presentation().items():
        if key not in tags:
            _set_once(client, experiment_id, key, value)


def presented(client: MlflowClient, experiment_id: str) -> bool:
    """Whether the experiment holds the passes view a link may open, written now if it lacks it; False when the
    store refuses (a read-only user, a store gone away): the link then opens the plain runs table."""
    try:
        present(client, experiment_id)
    except Exception as exc:
        if not store.is_store_error(exc):
            raise
        return False
    return True


def _set_once(client: MlflowClient, experiment_id: str, key: str, value: str) -> None:
    """Write an experiment tag; passes writing the same one at once meet the store's unique key (PostgreSQL), and
    the tag one of them wrote is kept."""
    try:
        client.set_experiment_tag(experiment_id, key, value)
    except MlflowException:
        time.sleep(0.5)
        if key not in client.get_experiment(experiment_id).tags:
            raise


def _describe(client: MlflowClient, experiment_id: str, tags: dict, protocol: Protocol) -> None:
    """The experiment's description in the UI, written once: a description the user wrote is never replaced."""
    if tags.get(schema.NOTE):
        return
    try:
        client.set_experiment_tag(experiment_id, schema.NOTE, descriptions.experiment_note(protocol))
    except MlflowException:
        # First passes started at once insert the same tag (a unique-key error on PostgreSQL): one description is kept.
        time.sleep(0.5)
        if not client.get_experiment(experiment_id).tags.get(schema.NOTE):
            raise


def lock_corpus(client: MlflowClient, experiment_id: str, name: str, fingerprint: str, declared: str = "") -> bool:
    """Pin the experiment's comparison to the corpus of its first benchmark pass (by content, not by shape); refuse,
    in one line naming both fingerprints, a benchmark pass on another corpus or on one the protocol does not declare.
    True when this call pinned it."""
    if declared and fingerprint != declared:
        raise GpucostError(f"this corpus has fingerprint {fingerprint[:12]}, the protocol declares corpus.fingerprint "
                           f"{declared[:12]}: a benchmark pass runs on the declared corpus; nothing recorded")
    current = client.get_experiment(experiment_id).tags.get(schema.CORPUS_LOCK, "")
    if current == fingerprint:
        return False
    if current:
        raise GpucostError(f"experiment '{name}' compares passes on corpus {current[:12]} (its first benchmark pass); "
                           f"this corpus is {fingerprint[:12]}: a comparison runs on one corpus, whatever its size and "
                           "buckets (use another --experiment); nothing recorded")
    try:
        client.set_experiment_tag(experiment_id, schema.CORPUS_LOCK, fingerprint)
    except MlflowException:  # first passes started at once on several machines: the store keeps one, as for lock()
        time.sleep(0.5)
        if client.get_experiment(experiment_id).tags.get(schema.CORPUS_LOCK, "") != fingerprint:
            raise
        return False
    return True


def lock_series(client: MlflowClient, experiment_id: str, name: str, declaration: dict) -> bool:
    """Record a series' declaration digest on the experiment at its first pass; refuse a pass under an edited one."""
    digest = hashlib.sha256(json.dumps(declaration, sort_keys=True).encode("utf-8")).hexdigest()
    key = f"{schema.SERIES_LOCK_PREFIX}{declaration['name']}"
    current = client.get_experiment(experiment_id).tags.get(key, "")
    if current == digest:
        return False
    if current:
        raise GpucostError(
            f"series '{declaration['name']}' of experiment '{name}' was locked at its first pass to {current[:12]}; "
            f"its declaration is now {digest[:12]}: a series cannot be edited once its timings exist "
            "(declare a new series, or use another --experiment)"
        )
    try:
        client.set_experiment_tag(experiment_id, key, digest)
    except MlflowException:
        time.sleep(0.5)
        if client.get_experiment(experiment_id).tags.get(key, "") != digest:
            raise
        return False
    return True
