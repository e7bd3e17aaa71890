"""A campaign's run opened before its first pass: a new one after its plan is checked against the protocol, or a
resumed one after checking it ran under the same protocol; the experiment locked to the protocol and to the series of
its variants once for all its passes, and the process and cache policy every pass shares.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from gpucost_mlflow.core.campaign.schedule import rotated
from gpucost_mlflow.core.campaign.settle import STAGE, pooled, refuse_pooling
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.inputs.variants import Declaration
from gpucost_mlflow.execution import devices, models
from gpucost_mlflow.flow.launcher import lock_series
from gpucost_mlflow.flow.preparation import Locked
from gpucost_mlflow.tracking import descriptions, experiments, spool
from gpucost_mlflow.tracking.campaign_run import CampaignRun, Opening, measured

if TYPE_CHECKING:
    from gpucost_mlflow.flow.campaign import CampaignPlan

# What every pass of a campaign shares: recorded on the parent run and on each pass.
CACHE_POLICY = (
    "fresh child process per pass; model and tokenizer files read from local disk (OS page cache "
    "warm after the first pass, the same for every variant); no torch.compile cache; HF hub offline"
)
FORKED_POLICY = (
    "a child process per pass, forked from a starter that imported torch, transformers and the model code once "
    "(child_imports: once; that time is each pass's import_s, counted in its load_s); model and tokenizer files read "
    "from local disk (OS page cache warm after the first pass, the same for every variant); no torch.compile cache; "
    "HF hub offline"
)


def cache_policy(protocol: Protocol) -> str:
    """The process and cache policy every pass of the campaign shares (PROTOCOL.md section 5: the same for all)."""
    return FORKED_POLICY if protocol.child_imports == "once" else CACHE_POLICY


def resume_run(client, experiment_name: str, plan: CampaignPlan, locked: Locked) -> CampaignRun:
    """The campaign run of plan.resume, running again: refused while its passes wait in the spool, or under
    another protocol."""
    waiting = spool.of_campaign(plan.resume)
    if waiting:
        raise GpucostError(
            f"{len(waiting)} pass(es) of campaign '{plan.resume}' wait in the spool {spool.spool_dir()}; "
            "run `gpucost sync` first, or resume would run their slots again"
        )
    run, digest = CampaignRun.find(client, locked.experiment_id, plan.resume)
    if digest != locked.protocol.digest:
        raise GpucostError(f"campaign '{plan.resume}' ran under another protocol than {plan.protocol_path}; it cannot "
                           "be resumed under this one")
    _lock(client, experiment_name, plan, locked, list(run.variants))
    run.reopen()
    return run


def open_run(client, experiment_name: str, plan: CampaignPlan, locked: Locked, parent_from_mlflow_run: str | None
             ) -> CampaignRun:
    """A new campaign run (or the `mlflow run` one) after checking the plan against the protocol: its params, tags
    and schedule.json."""
    variants, passes, protocol, experiment_id = plan.variants, plan.passes, locked.protocol, locked.experiment_id
    if plan.stage == STAGE:
        most = (protocol.settle_max_passes or 0) - protocol.passes_per_variant
        if passes > most:
            raise GpucostError(f"a second stage adds at most {most} passes per variant under this protocol "
                               f"(settle.max_passes_per_variant), not {passes}")
    elif passes != protocol.passes_per_variant:
        raise GpucostError(
            f"the protocol pre-registers {protocol.passes_per_variant} passes per variant, --passes says {passes}"
        )
    if len(set(variants)) != len(variants):
        raise GpucostError(f"variant listed twice in {','.join(variants)}")
    for name in variants:
        plan.declared.variant(name)
    earlier = measured(client, experiment_id) if plan.stage != STAGE else []
    if earlier:
        refuse_pooling(pooled(device_here(plan.declared, variants), earlier), experiment_name,
                       (plan.protocol_path, plan.declared.path), protocol.settle_max_passes)
    _lock(client, experiment_name, plan, locked, variants)
    campaign_id = "c" + uuid.uuid4().hex[:10]
    return CampaignRun.open(client, experiment_id, Opening(
        campaign_id, descriptions.campaign_name(campaign_id, variants), variants, passes, protocol.digest,
        cache_policy(protocol),
        [slot.record() for slot in rotated(variants, passes, protocol.seeds)], plan.tags), parent_from_mlflow_run)


def device_here(declared: Declaration, variants: list[str]) -> dict[str, str]:
    """Each variant's device as its passes here would record it (its manifest's device names, flow/preparation.py);
    none for a variant asking for a device this machine lacks (its pass fails and says so)."""
    found = {}
    for name in variants:
        try:
            found[name] = ", ".join(devices.device_names(models.resolve_device(declared.variant(name).settings.device)))
        except GpucostError:
            continue
    return found


def _lock(client, experiment_name: str, plan: CampaignPlan, locked: Locked, variants: list[str]) -> None:
    """The experiment locked to the protocol and to the series of the campaign's variants, once for all its passes."""
    experiments.lock(client, locked.experiment_id, experiment_name, locked.protocol, locked.protocol_text)
    lock_series(client, locked.experiment_id, experiment_name, plan.declared, variants)
