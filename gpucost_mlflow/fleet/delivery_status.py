"""A delivery fleet's status (`gpucost fleet status`, `gpucost bill --fleet`): per worker its corpora done, running
and failed beside its realized rental; the fleet's realized hours and bill so far against the committed plan, the
finish time at the realized rate against the deadline, and once every worker has ended the completeness check (every
input id of every corpus delivered exactly once, else the missing corpora and the command that finishes them) and the
forecast held against what was realized (core/fleet/held.py)."""

from __future__ import annotations

import datetime as dt
import shlex
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

from gpucost_mlflow.core.fleet import delivery
from gpucost_mlflow.core.fleet.held import Held, finish_line
from gpucost_mlflow.core.inputs.corpus import read_corpus
from gpucost_mlflow.core.inputs.fingerprints import sha256_file
from gpucost_mlflow.fleet.deliver import ROLE
from gpucost_mlflow.fleet.status import JobStatus, fleet_status
from gpucost_mlflow.tracking import delivered, experiments, fleet_run, store


@dataclass
class DeliveryStatus:
    """The fleet's jobs (each with its corpora), its lines, and once every worker has ended what the forecast held
    (None before, or when a worker's rental is unknown) and whether every corpus was delivered exactly once."""

    jobs: list[JobStatus]
    delivery: bool = False
    lines: list[str] = field(default_factory=list)
    held: Held | None = None
    complete: bool | None = None
    decision_id: str = ""


def _amount(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def delivery_status(experiment: str, fleet_id: str, corpora: Path | None = None,
                    now: dt.datetime | None = None) -> DeliveryStatus:
    """The fleet's status; a measuring fleet's jobs alone (its lines are its jobs')."""
    jobs = fleet_status(experiment, fleet_id)
    client = store.client()
    experiment_id = experiments.named(client, experiment).id
    fleet = fleet_run.find(client, experiment_id, fleet_id)
    params = fleet.params
    if params.get("kind") != ROLE:
        return DeliveryStatus(jobs)
    attempts = [one.attempt() for one in delivered.of_fleet(client, experiment_id, fleet_id)]
    shares = {name: [c for c in fleet.facts[name].get("share", "").split(",") if c] for name in fleet.gpus}
    tallies = delivery.tally(shares, attempts)
    for job in jobs:
        job.corpora = tallies[job.gpu].line()
    found = DeliveryStatus(jobs, True, decision_id=params.get("decision", ""))
    total = sum(map(len, shares.values()))
    done = len({a.corpus for a in attempts if a.outcome == delivery.ACCEPTED})
    currency, committed = params.get("currency", "USD"), _amount(params.get("worst_case", ""))
    known = [job.realized for job in jobs if job.realized is not None]
    hours = sum(job.hours or 0 for job in jobs)
    ended = all(job.ended is not None for job in jobs)
    so_far = "" if ended else " so far"
    bill = (f"{sum(known, Decimal(0))} {currency}" if len(known) == len(jobs) else
            f"{sum(known, Decimal(0))} {currency} without {len(jobs) - len(known)} worker(s) (empty: not known yet)")
    found.lines.append(f"Delivery fleet {fleet_id}: {params.get('variant')} on {params.get('device')}, {len(jobs)} "
                       f"worker(s); {done} of {total} corpora delivered; realized {hours:.2f} h and {bill}{so_far} "
                       f"(every attempt, setup included) against the committed {committed} {currency} for a "
                       f"{Decimal(params.get('forecast_hours', '0')):.2f} h window")
    starts = [job.started for job in jobs if job.started]
    now = now or dt.datetime.now(dt.timezone.utc)
    if not ended:
        elapsed = (now.timestamp() - min(starts)) / 3600 if starts else 0.0
        deadline = dt.datetime.fromisoformat(params["deadline"]) if params.get("deadline") else None
        found.lines.append(finish_line(done, total, elapsed, now, deadline).capitalize())
    failed = delivery.failed_named(attempts)
    if failed:
        found.lines.append(f"Failed: {'; '.join(failed)}")
    if not ended:
        return found
    found.lines.append(_completeness(found, params, experiment, fleet_id, shares, corpora, client, experiment_id))
    ends = [job.ended for job in jobs if job.ended]
    if committed is not None and len(known) == len(jobs):
        found.held = Held(sum(known, Decimal(0)), committed, currency,
                          (max(ends) - min(starts)) / 3600 if starts and ends else None,
                          Decimal(params.get("forecast_hours", "0")), float(params.get("spread", "1.5")), done)
        found.lines.append(found.held.line())
    return found


def _completeness(found: DeliveryStatus, params: dict[str, str], experiment: str, fleet_id: str,
                  shares: dict[str, list[str]], corpora: Path | None, client, experiment_id: str) -> str:
    """Every input id of every corpus delivered exactly once, checked against the corpus files; else which corpora
    are missing and the command that finishes them."""
    folder = corpora or Path(params.get("corpora_dir", ""))
    names = sorted(name for share in shares.values() for name in share)
    if not folder.is_dir() or not all((folder / name).is_file() for name in names):
        found.complete = None
        return (f"Completeness not checked: the corpora ({folder}) are not all on this machine; `gpucost fleet status "
                f"--fleet {fleet_id} --corpora DIR` names a folder holding them")
    expected, got = {}, {}
    for name in names:
        path = folder / name
        ids = tuple(str(row["id"]) for row in read_corpus(path, labelled=False).rows)
        expected[name] = ids
        key = delivery.key(sha256_file(path), params.get("decision", ""))
        accepted = [one for one in delivered.by_key(client, experiment_id, key) if one.attempt().outcome ==
                    delivery.ACCEPTED]
        got[name] = [ids if one.observed == one.expected == len(ids) else ("?",) * (one.observed or 0)
                     for one in accepted]
    check = delivery.completeness(expected, got)
    found.complete = check.complete
    if check.complete:
        return (f"Complete: every input id of the {len(names)} corpora delivered exactly once "
                f"({sum(map(len, expected.values()))} inputs, one accepted deliverable per corpus)")
    parts = [f"missing {', '.join(check.missing)}" if check.missing else "",
             f"delivered more than once {', '.join(check.twice)}" if check.twice else "",
             f"not every input id exactly once {', '.join(check.short)}" if check.short else ""]
    again = sorted(set(check.missing) | set(check.short))
    return (f"Incomplete: {'; '.join(p for p in parts if p)}"
            + (f"; `{finish_command(params, experiment, again)}` finishes them" if again else ""))


def finish_command(params: dict[str, str], experiment: str, names: list[str]) -> str:
    """The `gpucost fleet deliver` line that delivers these corpora of the fleet's folder for the same decision (each
    delivered one is skipped by its key)."""
    parts = ["gpucost fleet deliver --experiment", shlex.quote(experiment), "--corpora",
             shlex.quote(params.get("corpora_dir", "DIR")), "--only", shlex.quote(",".join(names)),
             "--max-cost", params.get("max_cost", "USD")]
    for option, key in (("--protocol", "protocol"), ("--variants-file", "variants_file"), ("--model", "model"),
                        ("--bucket", "bucket")):
        if params.get(key):
            parts += [option, shlex.quote(params[key])]
    parts += [f"--catalog {shlex.quote(path)}" for path in params.get("catalogs", "").split(",") if path]
    return " ".join(parts + ["--spot"] * (params.get("spot") == "true"))

