"""Re-judging pending passes once their reference exists, with the same pure judge the launcher uses.

A variant whose numerics differ from the fp32 reference is `pending` when it ran before any accepted reference pass on
the same corpus and model. Re-judging reads its written predictions and the reference's back from the store, applies its
output's rules (`workloads/<kind>/output.py`), and records the new verdict on the run (when, against which reference
run) and in its verdict.json, which keeps the first verdict beside the new one; raw metrics stay untouched. A pass no
longer pending is never touched again, so re-judging twice changes nothing.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import mlflow
from mlflow.entities import RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import Protocol, load_protocol
from gpucost_mlflow.core.judging import flips, judge, verdicts
from gpucost_mlflow.core.judging.pass_verdict import PassVerdict
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.tracking import descriptions, experiments, schema, search, writer


@dataclass
class Rejudged:
    """One pending pass judged again: its new status and reason, and the reference run it was judged against."""
    run_id: str
    variant: str
    status: str
    reason: str
    reference_run: str

    def line(self) -> str:
        """The line `gpucost rejudge` and `gpucost report` print for it (and the report lists)."""
        return (f"{self.variant} run {self.run_id}: pending -> {self.status} against reference run "
                f"{self.reference_run} ({self.reason})")


def _checks(verdict: PassVerdict, tags: dict) -> list[verdicts.Check]:
    """The checks recorded with the pass: its verdict.json's, else (a pass recorded before the checks moved there)
    its tags `gpucost.check.<name>` = 'pass: reason' or 'fail: reason'."""
    if verdict.checks:
        return list(verdict.checks)
    found = []
    for key, value in tags.items():
        if key.startswith(schema.CHECK_PREFIX):
            verdict, _, reason = value.partition(": ")
            found.append(verdicts.Check(key[len(schema.CHECK_PREFIX):], verdict == "pass", reason))
    return found


def fetch(run_id: str, files: tuple[str, ...], folder: Path) -> Path:
    """The run's exported files downloaded into a folder of their own (one that cannot be fetched is left out, and
    the output's read-back reports it missing)."""
    target = folder / run_id
    target.mkdir(parents=True, exist_ok=True)
    for name in files:
        try:
            mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name, dst_path=str(target))
        except Exception:  # noqa: BLE001, S110 - a file that cannot be fetched is reported missing by the read-back
            pass
    return target


def _model_labels(client: MlflowClient, run_id: str, folder: Path) -> list[str]:
    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=schema.MANIFEST,
                                               dst_path=str(folder / f"manifest-{run_id}"))
    return list(json.loads(Path(path).read_text(encoding="utf-8"))["model"]["labels"])


def find_reference(client: MlflowClient, experiment_id: str, reference: str, fingerprint: str, model_revision: str,
                   seed: str = ""):
    """The latest accepted pass of the reference variant on the same corpus and model (and seed, when given: a
    protocol's seeds are judged apart), or None."""
    same_seed = f" AND params.`{schema.SEED_TORCH}` = '{seed}'" if seed else ""
    return search.newest_by_fact(client, experiment_id, schema.CORPUS_FINGERPRINT, fingerprint, (
        f"tags.`{schema.VARIANT}` = '{reference}' AND tags.`{schema.STATUS}` = '{Status.ACCEPTED}' "
        f"AND params.`{schema.MODEL_REVISION}` = '{model_revision}'{same_seed}"))


def _verdict(run_id: str, folder: Path) -> PassVerdict:
    """The pass's verdict.json as the store holds it (an empty verdict when it has none)."""
    path = fetch(run_id, (schema.VERDICT,), folder) / schema.VERDICT
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return PassVerdict()
    return PassVerdict.from_record(found) if isinstance(found, dict) else PassVerdict()


def load_reference(run, rules, protocol: Protocol, labels: list[str], folder: Path):
    """The reference pass as its output's judge needs it (`rules`: workloads/<kind>/output.py), its files read back
    from the store."""
    return rules.reference(run.info.run_id, dict(run.data.metrics), fetch(run.info.run_id, rules.FILES, folder),
                           protocol, labels)


def locked_protocol(tags: dict) -> Protocol | None:
    """The protocol locked on an experiment (its tags), read back from its stored text; None when the text is not
    stored or does not give the locked digest back (a what-if report re-judges under the passes' own protocol)."""
    text, digest = tags.get(schema.PROTOCOL_TEXT, ""), tags.get(schema.PROTOCOL_DIGEST, "")
    if not text or not digest:
        return None
    with tempfile.TemporaryDirectory(prefix="gpucost-locked-") as temp:
        path = Path(temp) / Path(tags.get(schema.PROTOCOL_PATH, "") or "protocol.yaml").name
        path.write_bytes(text.encode("utf-8"))
        try:
            protocol = load_protocol(path)
        except GpucostError:
            return None
    return protocol if protocol.digest == digest else None


def rejudge(experiment: str | experiments.Experiment, protocol: Protocol, client: MlflowClient | None = None
            ) -> list[Rejudged]:
    """Judge every pending pass of the experiment (by name, or as its command resolved it) whose reference now
    exists; returns those judged."""
    client = client or MlflowClient()
    if isinstance(experiment, experiments.Experiment):
        experiment_id, name, locked = experiment.id, experiment.name, experiment.tags.get(schema.PROTOCOL_DIGEST, "")
    else:
        found = experiments.resolve(client, experiment, create=False)
        if found is None:
            raise GpucostError(f"experiment '{experiment}' not found in {client.tracking_uri}")
        experiment_id, name = found.id, found.name
        locked = experiments.locked_digest(client, experiment_id)
    if locked and locked != protocol.digest:
        raise GpucostError(f"experiment '{name}' is locked to protocol {locked[:12]}, {protocol.path} is "
                           f"{protocol.digest[:12]}: re-judge with the protocol the passes ran under")
    # Every page read before any verdict is recorded: a recorded pass leaves the filter and would shift the pages.
    pending = list(search.all_runs(client, experiment_id, f"tags.`{schema.STATUS}` = '{Status.PENDING}'"))
    reference_name = protocol.acceptance.reference_variant
    rules = registry.output(protocol.acceptance.output)
    judged, references = [], {}  # one reference lookup per corpus and model, not one per pending pass
    reference_verdicts: dict[str, dict] = {}  # and its verdict.json fetched once
    with tempfile.TemporaryDirectory(prefix="gpucost-rejudge-") as temp:
        folder = Path(temp)
        for run in pending:
            key = (schema.run_facts(run).get(schema.CORPUS_FINGERPRINT, ""),
                   run.data.params.get(schema.MODEL_REVISION, ""),
                   run.data.params.get(schema.SEED_TORCH, "") if protocol.seeds else "")
            if key not in references:
                references[key] = find_reference(client, experiment_id, reference_name, *key)
            reference_run = references[key]
            if reference_run is None:
                continue
            labels = _model_labels(client, run.info.run_id, folder)
            back = rules.read_back(fetch(run.info.run_id, rules.FILES, folder), protocol, labels)
            first = _verdict(run.info.run_id, folder)
            result = rules.judge_against_reference(_checks(first, run.data.tags), dict(run.data.metrics), back,
                                                   load_reference(reference_run, rules, protocol, labels, folder),
                                                   protocol.acceptance, **_first(rules, first))
            if reference_run.info.run_id not in reference_verdicts:
                reference_verdicts[reference_run.info.run_id] = _verdict(reference_run.info.run_id, folder)
            _add_flips(result, first, reference_verdicts[reference_run.info.run_id])
            _record(client, run, result, reference_run.info.run_id, first, folder)
            judged.append(Rejudged(run.info.run_id, run.data.tags.get(schema.VARIANT, ""), result.status,
                                   result.reason, reference_run.info.run_id))
    return judged


def _first(rules, first: PassVerdict) -> dict:
    """The first verdict's recorded form for an output whose judge reads it (`first`: the gold labels its bootstrap
    resamples); an output written before it existed is called as it was."""
    return {"first": first.record()} if "first" in inspect.signature(rules.judge_against_reference).parameters else {}


def _add_flips(result: judge.Judgement, first: PassVerdict, reference: PassVerdict) -> None:
    """The answers that changed against the reference, by direction, where both verdicts recorded their correct ids:
    in the comparison verdict.json keeps and among the figures the new verdict logs."""
    changed = flips.from_verdicts(first.record(), reference.record())
    if changed is not None:
        result.comparison = {**result.comparison, "flips": changed.record(),
                             "metrics": {**(result.comparison.get("metrics") or {}), **judge.flip_metrics(changed)}}


def _record(client: MlflowClient, run, result: judge.Judgement, reference_run: str, first: PassVerdict,
            folder: Path) -> None:
    """The new verdict: its status tags and checks line, when and against what it was made (one tag), the figures of
    the comparison (cosine, exact match: whatever the output's judge measured; raw measurements untouched), its
    `accepted` metric and its description (one log_batch); then verdict.json with the new checks and the first
    verdict kept beside them."""
    at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    _, tags = writer.outcome_batch(status=result.status, reason=result.reason, metrics={},
                                   quality_verdict=result.quality_verdict, checks=result.checks)
    tags = [tag for tag in tags if tag.key != schema.MEMORY_COUNTER]
    tags.append(RunTag(schema.REJUDGED, descriptions.rejudged_tag(reference_run, str(Status.PENDING), at)))
    measured = {key: float(value) for key, value in (result.comparison.get("metrics") or {}).items()}
    metrics, note = writer.restated({**schema.run_facts(run), **{tag.key: tag.value for tag in tags}},
                                    {**run.data.metrics, **measured})
    now = int(time.time() * 1000)
    client.log_batch(run.info.run_id,
                     metrics=metrics + [writer.metric(key, value, now) for key, value in measured.items()],
                     tags=tags + note)
    verdict = first.rejudged_as(result.status, result.reason, result.quality_verdict, result.checks, result.comparison,
                                at, reference_run).record()
    path = folder / f"rejudged-{run.info.run_id}" / schema.VERDICT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(verdict, indent=2, default=str), encoding="utf-8")
    client.log_artifact(run.info.run_id, str(path))
