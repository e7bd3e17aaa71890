"""The confirmation run (`gpucost confirm`): the chosen configuration (of a tie, the one the card runs), run on the
disjoint confirmation corpus for at least the protocol's `confirmation.min_s`, judged by the same bars.

Where the chosen configuration is judged against the reference variant, the reference's outputs on the confirmation
corpus come first, from one pass of its own (its clock is not repeated: it serves the comparison, not a rate). The
verdicts are read by the report (report/confirmations.py, core/measurement/confirmation.py). Under the protocol's
`child_imports: once` both passes fork from one starter, as a campaign's do (execution/forkserver.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol as Shape

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.corpus import read_corpus
from gpucost_mlflow.core.inputs.method_fields import CONFIRMATION_FILE
from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.inputs.variants import Declaration, Variant
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement.confirmation import NOT_YET, Confirmation
from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.decision import Assessment
from gpucost_mlflow.execution import forkserver
from gpucost_mlflow.flow.launcher import PassResult, execute
from gpucost_mlflow.flow.preparation import PassRequest
from gpucost_mlflow.tracking import experiments, rejudge, schema, store


@dataclass(frozen=True)
class ConfirmPlan:
    """What a confirmation runs on: the experiment, its protocol and variants, the corpus, the model, the code."""

    experiment: str
    protocol: Protocol
    protocol_path: Path
    declared: Declaration
    corpus_path: Path
    model_path: Path
    code_root: Path


def corpus_of(root: Path, protocol: Protocol) -> Path:
    """The confirmation corpus: the protocol's confirmation.file under root, else confirmation.jsonl beside the corpus
    the comparison corpus was built as (corpus.slice_of, else corpus.file); a missing one is refused in one line."""
    declared = protocol.confirmation.file
    built_as = Path(protocol.corpus_slice_of or protocol.corpus_file)
    path = root / (Path(declared) if declared else built_as.parent / CONFIRMATION_FILE)
    if not path.exists():
        raise GpucostError(f"{path}: the confirmation corpus is missing; `gpucost corpus build --out "
                           f"{path.parent}` writes it beside the comparison corpus (or pass --corpus FILE)")
    return path


def check(chosen: list[Assessment], plan: ConfirmPlan) -> None:
    """Refuse, before anything runs, a confirmation on the comparison corpus itself or of a lanes configuration."""
    fingerprint = read_corpus(plan.corpus_path).fingerprint
    for a in chosen:
        identity = a.configuration.identity
        if identity is not None and identity.corpus_fingerprint == fingerprint:
            raise GpucostError(f"{plan.corpus_path} is the corpus {a.configuration.name} was compared on: a "
                               "confirmation runs on a disjoint corpus")
        if plan.declared.variant(a.configuration.variant).settings.lanes > 1:
            raise GpucostError(f"{a.configuration.name} runs in lanes, whose clocks cannot repeat the corpus: it "
                               "cannot be confirmed for confirmation.min_s")


def _request(variant: Variant, plan: ConfirmPlan, repeat: bool, tags: dict | None = None) -> PassRequest:
    return PassRequest(variant=variant, corpus_path=plan.corpus_path, model_path=plan.model_path,
                       experiment=plan.experiment, protocol_path=plan.protocol_path, declared=plan.declared,
                       role=schema.CONFIRMATION_ROLE, code_root=plan.code_root, repeat=repeat, slot_tags=tags or {})


def _reference_outputs(a: Assessment, variant: Variant, plan: ConfirmPlan, fingerprint: str,
                       on_pass: Callable) -> None:
    """The reference variant's outputs on the confirmation corpus, run once when the variant is judged against them
    and no accepted one of the same model exists yet."""
    protocol = plan.protocol
    reference = plan.declared.variant(protocol.acceptance.reference_variant)
    differs = registry.output(protocol.acceptance.output).needs_reference
    if variant.name == reference.name or not differs(variant.settings, reference.settings):
        return
    client = store.client()
    experiment_id = experiments.named(client, plan.experiment).id
    revision = a.configuration.identity.model_revision if a.configuration.identity else ""
    if rejudge.find_reference(client, experiment_id, reference.name, fingerprint, revision) is None:
        marked = {schema.CONFIRMATION: schema.REFERENCE_OUTPUTS}  # named and tagged as the reference, never counted
        on_pass(reference.name, execute(_request(reference, plan, repeat=False, tags=marked)),
                "the reference's outputs")


def run(chosen: list[Assessment], plan: ConfirmPlan, on_pass: Callable[[str, PassResult, str], None]) -> None:
    """Each chosen configuration not yet confirmed: the reference's outputs first where it needs them, then its
    confirmation run."""
    fingerprint = read_corpus(plan.corpus_path).fingerprint
    once = plan.protocol.child_imports == "once" and bool(chosen)
    with forkserver.serving() if once else contextlib.nullcontext():  # imports timed once: each pass's import_s
        for a in chosen:
            variant = plan.declared.variant(a.configuration.variant)
            _reference_outputs(a, variant, plan, fingerprint, on_pass)
            on_pass(variant.name, execute(_request(variant, plan, repeat=True)), "confirmation")


class Read(Shape):
    """What a confirmation reads of the decision each time: the choice and its confirmation verdicts by name."""

    choice: Choice
    confirmations: Mapping[str, Confirmation]


def to_confirm(read: Read, ran: list[str]) -> Assessment | None:
    """The configuration to confirm now: the one the card runs (a tie's others are equal in cost and not run), while
    it is not yet confirmed and was not run already (a run waiting on its reference stays not yet confirmed); None
    once the choice held, committed nothing, or waits."""
    first = read.choice.chosen[0] if read.choice.decided else None
    if first is None or first.configuration.name in ran:
        return None
    return first if read.confirmations[first.configuration.name].verdict == NOT_YET else None


def in_turn(built: Read, read: Callable[[], Read], confirm_one: Callable[[Assessment, str], None]
            ) -> tuple[Read, list[str]]:
    """Confirm the choice (`built`, as read) as a user would: the one the card runs; one that does not hold leaves its
    tie and the next is confirmed in turn, until one holds or nothing is committed. `confirm_one(a, left)` runs a (left:
    the one that left the tie before it, else ''); `read()` reads the decision again. The decision as last read, and
    the configurations run, in order."""
    ran: list[str] = []
    while (waiting := to_confirm(built, ran)) is not None:
        confirm_one(waiting, ran[-1] if ran else "")
        ran.append(waiting.configuration.name)
        built = read()
    return built, ran
