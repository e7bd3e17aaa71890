"""The pre-registered protocol: loading, validation (one-line errors naming the field) and its digest."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.inputs import method_fields as method
from gpucost_mlflow.core.inputs import plan_start, yaml_text
from gpucost_mlflow.core.inputs import protocol_sections as sections
from gpucost_mlflow.core.inputs.acceptance import DEFAULT_OUTPUT, Acceptance
from gpucost_mlflow.core.inputs.protocol_fields import refuse_other_outputs, refuse_unknown
from gpucost_mlflow.core.inputs.protocol_sections import (
    DEFAULT_SPREAD_RATIO,
    ConfirmationRule,
    Deliverables,
    OtherCost,
    PlanAssumptions,
)
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.names import ACCURACY, MACRO_F1

SCENARIOS = ("offline",)
METRICS = (MACRO_F1, ACCURACY)


@dataclass(frozen=True)
class Protocol:
    path: str
    digest: str
    question: str
    scenario: str
    corpus_file: str
    corpus_size: int
    buckets: dict
    labels: list
    acceptance: Acceptance
    passes_per_variant: int
    warmup: dict
    exclusion_rule: str
    deadline: dt.datetime | None
    deliverables: Deliverables
    plan: PlanAssumptions | None
    other_costs: tuple[OtherCost, ...] = ()
    # The task its output's protocol section fixes (base.Output.task: a generations protocol's prompt and new tokens;
    # its record() is what the manifest and the child get), None when the output has no section.
    task: object | None = None
    # The largest max/min ratio of a configuration's own pass durations before the report calls it unstable.
    max_spread_ratio: float = DEFAULT_SPREAD_RATIO
    max_price_age_days: int | None = None  # a catalog price older than this is stale: not priced unless allowed
    system_metrics_interval_s: float = 1.0  # MLflow's system metrics sampled by the launcher at this interval
    max_other_cpu_share: float = 0.25  # other processes' share of the CPU time during a pass above it: contended
    # The corpus is processed again inside one clock until the measured part lasts this long (no default: a
    # protocol for a fast device sets it); pass_s stays the time of one corpus.
    min_measured_s: float | None = None
    # Laps the measured clock holds at least (2 when absent, never fewer): the first lap pays each new input shape's
    # setup, the later ones time the steady rate (core/measurement/repetitions.py)
    min_laps: int = 2
    # per_pass: each pass's child imports torch and the model code; once: a campaign's starter imports them once,
    # timed, and forks every child from it; each pass counts that time in its load_s (execution/forkserver.py)
    child_imports: str = "per_pass"
    # each pass idles this long after loading, before warm-up: idle power where a counter exists
    cooldown_s: float = 0.0
    min_utilisation: float = 0.5  # the pass's device busy less than this share of the measured part: starved
    alternatives: sections.Alternatives | None = None  # hosted endpoints priced beside the rental (not judged)
    corpus_slice_of: str = ""  # corpus.slice_of: corpus.file is `gpucost corpus slice` of this corpus ("" if none)
    corpus_fingerprint: str = ""  # corpus.fingerprint: the only corpus a benchmark pass may run on ("" if not declared)
    confidence: float = 0.95  # the separation test's confidence (core/measurement/stats.py)
    reproduce: str = "bounded-deviation"  # what a repetition is to reproduce: one of REPRODUCE (the report's scope)
    # settle.max_passes_per_variant: the pre-registered second stage's ceiling (`gpucost campaign --settle`); None when
    # the protocol declares none
    settle_max_passes: int | None = None
    # race.from_round: from this round on, a configuration dominated or late whatever the noise stops being measured,
    # and from the first one a rejection more passes cannot change (core/campaign/race.py); None: the full design
    race_from_round: int | None = None
    # confirmation: the confirmation corpus and the seconds `gpucost confirm` runs the chosen configuration on it
    confirmation: ConfirmationRule = field(default_factory=ConfirmationRule)
    seeds: tuple[int, ...] = ()  # seeds: every variant's passes at each, kept apart (core/judging/seeds.py); () seed 0
    # the deadline's hours after a start at the report (`plan.start: at_report`, `deadline: 96h`); None for a date
    deadline_after_h: float | None = None

    def at(self, now: dt.datetime) -> Protocol:
        """The protocol with its window placed: a start at the report at `now`, its deadline so many hours after."""
        plan, deadline = plan_start.resolved(self.plan, self.deadline, self.deadline_after_h, now)
        return replace(self, plan=plan, deadline=deadline)

    @property
    def starts_at_report(self) -> bool:
        return self.plan is not None and self.plan.start == plan_start.AT_REPORT

    @property
    def deadline_words(self) -> str:
        """The deadline as declared: a date-time, hours after a start at the report, or '' when none is declared."""
        if self.deadline_after_h is not None:
            return f"{self.deadline_after_h:g} h after the report's reading (plan.start: {plan_start.AT_REPORT})"
        return self.deadline.isoformat() if self.deadline else ""


def digest_of(data: bytes) -> str:
    """The protocol digest: sha256 of the file's bytes (any edit is a new protocol)."""
    return hashlib.sha256(data).hexdigest()


class _Fields:
    """Reads typed fields from the YAML mapping, naming the dotted field in every error."""

    def __init__(self, path: Path, document: dict):
        self.path = path
        self.document = document

    def get(self, dotted: str, kind: type | tuple, *, allow_empty: bool = False):
        node = self.document
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node or node[part] is None:
                raise GpucostError(f"{self.path}: missing field '{dotted}'")
            node = node[part]
        if isinstance(node, bool) and kind in (int, float, (int, float)):
            raise GpucostError(f"{self.path}: field '{dotted}' must be a number")
        if not isinstance(node, kind):
            name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise GpucostError(f"{self.path}: field '{dotted}' must be a {name}")
        if not allow_empty and isinstance(node, (str, list, dict)) and not node:
            raise GpucostError(f"{self.path}: field '{dotted}' is empty")
        return node

    def fraction(self, dotted: str) -> float:
        value = float(self.get(dotted, (int, float)))
        if not 0.0 <= value <= 1.0:
            raise GpucostError(f"{self.path}: field '{dotted}' must be between 0 and 1")
        return value

    def positive(self, dotted: str) -> int:
        value = self.get(dotted, int)
        if value < 1:
            raise GpucostError(f"{self.path}: field '{dotted}' must be a positive whole number")
        return value


def load_protocol(path: Path) -> Protocol:
    """The protocol file, every required field present and typed; its digest from the exact bytes."""
    data, document = _read(path)
    refuse_unknown(path, document)
    f = _Fields(path, document)
    scenario = f.get("scenario", str)
    if scenario not in SCENARIOS:
        raise GpucostError(f"{path}: field 'scenario' must be one of {', '.join(SCENARIOS)} (got {scenario!r})")
    declared = document.get("acceptance")
    output = declared.get("output", DEFAULT_OUTPUT) if isinstance(declared, dict) else DEFAULT_OUTPUT
    if output not in registry.output_names():
        raise GpucostError(f"{path}: field 'acceptance.output' must be one of {', '.join(registry.output_names())}")
    rules = registry.output(output)
    refuse_other_outputs(path, document, output)
    task = _task(f, output, rules)
    scored = rules.scored(task)
    metric = f.get("acceptance.main_metric", str) if scored else ""
    if scored and metric not in METRICS:
        raise GpucostError(f"{path}: field 'acceptance.main_metric' must be one of {', '.join(METRICS)}")
    if f.get("acceptance.ids", str) != "exact":
        raise GpucostError(f"{path}: field 'acceptance.ids' must be 'exact'")
    f.get("acceptance.format", str)
    buckets = f.get("corpus.buckets", dict)
    for name, count in buckets.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise GpucostError(f"{path}: field 'corpus.buckets.{name}' must be a whole number")
    plan = sections.plan(path, document["plan"]) if document.get("plan") is not None else None
    deadline, after_h = plan_start.deadline(path, document.get("deadline"),
                                            plan is not None and plan.start == plan_start.AT_REPORT)
    warmup = {"inputs": f.positive("warmup.inputs"), "passes": f.positive("warmup.passes")}
    return Protocol(
        path=str(path),
        digest=digest_of(data),
        question=" ".join(f.get("question", str).split()),
        scenario=scenario,
        corpus_file=f.get("corpus.file", str),
        corpus_size=f.positive("corpus.size"),
        buckets=dict(buckets),
        labels=list(f.get("corpus.labels", list)),
        acceptance=replace(rules.acceptance(f, metric), confidence=method.confidence(path, document.get("confidence")),
                           resampling=method.resampling(path, document),
                           changes_work=method.changes_work(path, document,
                                                            tuple(getattr(rules, "LIKE_FOR_LIKE", ())))),
        passes_per_variant=f.positive("passes_per_variant"),
        warmup=warmup,
        exclusion_rule=" ".join(f.get("exclusion_rule", str).split()),
        deadline=deadline,
        deliverables=sections.deliverables(f, path, document.get("deliverables") or {}),
        plan=plan,
        deadline_after_h=after_h,
        other_costs=sections.other_costs(path, document.get("other_costs")),
        task=task,
        corpus_slice_of=f.get("corpus.slice_of", str) if document["corpus"].get("slice_of") is not None else "",
        corpus_fingerprint=sections.fingerprint(path, document["corpus"].get("fingerprint")),
        confidence=method.confidence(path, document.get("confidence")),
        reproduce=method.reproduce(path, document.get("reproduce")),
        settle_max_passes=method.settle(path, document, f),
        race_from_round=method.race(path, document),
        confirmation=ConfirmationRule(*method.confirmation(path, document.get("confirmation"))),
        seeds=method.seeds(path, document.get("seeds")),
        max_spread_ratio=sections.spread_ratio(path, document.get("max_spread_ratio")),
        max_price_age_days=(f.positive("max_price_age_days") if document.get("max_price_age_days") is not None
                            else None),
        alternatives=sections.alternatives(path, document.get("alternatives")),
        system_metrics_interval_s=sections.interval(path, document.get("system_metrics_interval_s")),
        max_other_cpu_share=(f.fraction("max_other_cpu_share") if document.get("max_other_cpu_share") is not None
                             else 0.25),
        min_measured_s=sections.seconds(path, document, "min_measured_s", None),
        min_laps=sections.laps(path, document.get("min_laps")),
        child_imports=method.child_imports(path, document.get("child_imports")),
        cooldown_s=sections.seconds(path, document, "cooldown_s", 0.0),
        min_utilisation=f.fraction("min_utilisation") if document.get("min_utilisation") is not None else 0.5,
    )


def _read(path: Path) -> tuple[bytes, dict]:
    """The protocol file's exact bytes and its YAML mapping, refused in one line when absent or not a mapping."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise GpucostError(f"{path}: protocol file not found") from None
    try:
        document = yaml_text.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise GpucostError(f"{path}: not valid YAML ({one_line(exc)})") from None
    if not isinstance(document, dict):
        raise GpucostError(f"{path}: expected a mapping of protocol fields")
    return data, document


def _task(f: _Fields, output: str, rules) -> object | None:
    """The task the output's own section fixes, read by its rules (`base.Output.task`), which also refuse it missing;
    another output's section is refused by that output's rules; None when the output has no section."""
    for name, owner in registry.sections().items():
        if owner != output and f.document.get(name) is not None:
            registry.output(owner).task(f.document[name], str(f.path), output)  # refuses it: not this output's task
    return rules.task(f.document.get(rules.SECTION), str(f.path), output) if rules.SECTION else None
