"""`gpucost variants propose`: from a finished campaign, write the third series before any of its timings exist.

Reads which changes of the series with a reference were accepted in the experiment's finished
campaigns (tracking), which precisions the device runs faster than fp32 (the peaks cached by
`gpucost doctor --peak`, execution), combines them (core/campaign/proposal.py) and writes a variants file
holding every declared variant plus the new series. The series is locked on the experiment at its
first pass like every series (flow/launcher.py), so it cannot be edited after timings exist.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import yaml
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.campaign.proposal import Change, Proposal, changes_of, propose
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import workloads, yaml_text
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.inputs.variants import load_series, load_variants
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.stats import Durations
from gpucost_mlflow.core.money.decision import Configuration
from gpucost_mlflow.core.money.feasibility import feasibility
from gpucost_mlflow.core.names import GPU_UTILISATION
from gpucost_mlflow.tracking import experiments, schema, search, store
from gpucost_mlflow.tracking.attempts_table import frame
from gpucost_mlflow.tracking.reader import attempts

SERIES_NAME = "combined"


def _finished_campaigns(client: MlflowClient, experiment_id: str) -> list[str]:
    runs = search.all_runs(client, experiment_id, f"tags.`{schema.ROLE}` = '{schema.CAMPAIGN_ROLE}'", order_by=None)
    return [r.data.tags.get(schema.CAMPAIGN_ID, "") for r in runs if r.info.status == "FINISHED"]


def utilisation_by_batch(experiment: str, device: str, client: MlflowClient | None = None) -> dict[int, float]:
    """The median GPU utilisation of the experiment's completed one-lane passes on this device, per batch size (the
    batch series stops at the first size no longer starved, core/campaign/batch_series.py); {} when none."""
    client = client or store.client()
    try:
        found = experiments.named(client, experiment)
    except GpucostError:  # not measured yet: the series is proposed from the memory estimate alone
        return {}
    table = frame(attempts(client, found))
    table = table[(table["device"] == device) & table[GPU_UTILISATION].notna() & (table["lanes"].fillna(1) == 1)]
    sizes = pd.to_numeric(table["batch_size"], errors="coerce")
    medians = table[sizes.notna()].groupby(sizes.dropna().astype(int))[GPU_UTILISATION].median()
    return {int(size): float(value) for size, value in medians.items()}


def changes(experiment: str, variants_path: Path, client: MlflowClient | None = None) -> tuple[str, list[Change], str]:
    """(reference, each measured change with its verdict, campaigns read) from the finished campaigns."""
    client = client or store.client()
    found = experiments.named(client, experiment)
    campaigns = [c for c in _finished_campaigns(client, found.id) if c]
    if not campaigns:
        raise GpucostError(f"experiment '{experiment}' has no finished campaign to propose from; nothing written")
    table = frame(attempts(client, found))
    table = table[table["campaign_id"].isin(campaigns) & (table["role"] == "benchmark")]
    variants = load_variants(variants_path)
    found_changes, reference = [], ""
    for series in load_series(variants_path).values():
        if not series.reference or series.combines:
            continue
        reference = reference or series.reference
        if series.reference != reference:
            continue
        for member in series.members:
            rows = table[table["variant"] == member]
            if not len(rows):
                continue
            ok, why = feasibility(Configuration("", member, list(rows["status"]), Durations(()), {}))
            accepted = rows[rows["status"] == Status.ACCEPTED]
            compared = bool(len(accepted)) and bool(accepted["against_reference"].all())
            found_changes.append(Change(member, changes_of(variants[reference], variants[member]), ok,
                                        "" if ok else why,
                                        compared))
    if not found_changes:
        raise GpucostError(f"experiment '{experiment}': its finished campaigns measured no variant of a series with a "
                           "reference; nothing to combine; nothing written")
    return reference, found_changes, ", ".join(campaigns)


def text(proposal: Proposal, variants_path: Path, campaigns: str, out_folder: Path | None = None) -> str:
    """Every declared variant, plus the new series and its variants (settings that differ from the defaults).

    Written to another folder, a relative python: workload path is rewritten to reach the same file from there."""
    document = _relocated(yaml_text.safe_load(variants_path.read_text(encoding="utf-8")) or {}, variants_path.parent,
                          out_folder or variants_path.parent)
    defaults = document.get("defaults") or {}
    series = dict(document.get("series") or {})
    if proposal.series in series:
        raise GpucostError(f"{variants_path} already declares a series '{proposal.series}'; nothing written")
    declared = dict(document.get("variants") or {})
    clash = sorted(set(proposal.variants) & set(declared))
    if clash:
        raise GpucostError(f"{variants_path} already declares {', '.join(clash)}; nothing written")
    for name, settings in proposal.variants.items():
        values = {**settings.record(), "engine": settings.engine}  # the engine named even when it is torch
        declared[name] = ({k: v for k, v in values.items() if defaults.get(k) != v}
                          or {"batch_size": settings.batch_size})
    series[proposal.series] = {"field": list(proposal.fields), "reference": proposal.reference, "combines": True,
                               "proposed_from": campaigns, "variants": list(proposal.variants)}
    left = "".join(f"#   {name}: {why}\n" for name, why in proposal.left_out.items()) or "#   (none)\n"
    header = (f"# Variants proposed by `gpucost variants propose` on {dt.date.today().isoformat()} from campaign(s) "
              f"{campaigns}, before any of their timings exist.\n"
              f"# Series '{proposal.series}': the accepted changes {', '.join(proposal.combined)} of the series with "
              f"reference {proposal.reference}, combined, and a batch-size sweep under all of them.\n"
              f"# Left out:\n{left}"
              "# The series is locked on the experiment at its first pass: an edit after that is refused.\n")
    return header + yaml.safe_dump({"defaults": defaults, "series": series, "variants": declared}, sort_keys=False)


def _relocated(document: dict, source: Path, target: Path) -> dict:
    """The document with every workload value (defaults and variants) moved from the source folder to the target."""
    if source.resolve() == target.resolve():
        return document

    def move(values):
        if not isinstance(values, dict) or "workload" not in values:
            return values
        return {**values, "workload": workloads.relocated(values["workload"], source, target)}

    return {**document, "defaults": move(document.get("defaults") or {}),
            "variants": {name: move(values) for name, values in (document.get("variants") or {}).items()}}


def run(experiment: str, variants_path: Path, out: Path, client: MlflowClient | None = None) -> Proposal:
    """Propose and write; nothing is written when there is nothing to combine."""
    if out.exists():
        raise GpucostError(f"{out} exists: a proposal is never overwritten (choose another --out); nothing written")
    reference, found, campaigns = changes(experiment, variants_path, client)
    variants = load_variants(variants_path)
    from gpucost_mlflow.execution.models import resolve_device  # deferred: imports torch

    gpu = resolve_device("auto").type == "cuda"
    from gpucost_mlflow.execution import peak  # deferred: imports torch

    proposal = propose(variants[reference], found, SERIES_NAME, peak.slow_precisions(), gpu=gpu)
    content = text(proposal, variants_path, campaigns, out.parent)
    check = out.with_name(f".{out.name}.check.yaml")
    write_atomic(check, content.encode("utf-8"))
    try:
        load_variants(check)  # the proposal must pass the same series checks as any declaration
    finally:
        check.unlink(missing_ok=True)
    write_atomic(out, content.encode("utf-8"))
    return proposal
