"""The interface every workload kind offers, and what its child hands the runner (`Work`).

A kind is named data plus modules found by convention and imported only when needed, so reading the registry
imports neither torch nor the child's code: `<package>.child.load(spec, device) -> Work` in the pass's child,
`<package>.launch.describe(...)` / `.default_model(root)` in the launcher, and, for the kind that first delivers an
output, `<package>.output`: that output's pure rules (`Output` below), shared by every kind delivering it. Whatever
names one output (its protocol section and task, its bar's fields, its judge) lives there, never in core/.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Protocol

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import engines
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import WorkloadRecord


@dataclass
class Work:
    """A loaded workload: what the runner calls, in its order, around the measured clock.

    Every kind hands the runner the same five things, so the harness keeps what it does for all of them: ids,
    batching order, warm-up, the measured clock with device synchronisation, memory peaks, the child process,
    failures kept as rows, the export and its timing."""

    tokenizer: object  # the harness tokenizer (None where the workload needs none)
    model: object  # what `process` runs: a model, or the state the user's load() returned
    process: Callable  # (ids, texts, tokenizer, model, settings: Settings, device, on_batch) -> outputs with .ids;
    # on a failure it raises outcome.PassFailure carrying the finished batches' outputs
    utilisation: Callable  # (outputs, pass_s or None) -> FLOP metrics, or their missing reasons
    export: Callable  # (folder, outputs, duplicate_at) -> None: the deliverable files
    memory: Callable | None = None  # (device) -> memory peaks as execution/memory.peaks gives them; None: torch's
    empty: Callable[[], object] = field(default=lambda: NoOutputs())  # the outputs of a pass that failed before its
    # first batch: the kind's own outputs type, empty


@dataclass
class NoOutputs:
    """What a pass that failed before its first batch delivered, for a kind that names no empty outputs of its own."""

    ids: list = field(default_factory=list)

    def batch_lengths(self) -> list[list[int]]:
        return []


@dataclass(frozen=True)
class Described:
    """A variant's workload as the launcher checked it: the manifest's model section (its recorded form), the workload
    record its kind's child reads (the engine added by the launcher), the labels."""

    workload: object  # core/inputs/workloads.Workload
    model: dict
    record: WorkloadRecord
    labels: list[str]


@dataclass(frozen=True)
class Kind:
    """One workload kind: its name as declared, what it delivers, and the package of its folder."""

    name: str  # the `workload:` value (user code: the kind `python`, declared as python:PATH_OR_MODULE)
    output: str  # labels | embeddings | generations; "" when it tells by what it returns (user code)
    package: str  # the folder's module path: <package>.child and <package>.launch
    # Whether its outputs depend on no seed: the built-in kinds are (no sampling: a classifier's and an embedder's
    # forward pass, greedy generation); user code is not known to be, so a protocol's seeds matter there.
    deterministic: bool = True
    # Whether its model is a BERT-style encoder whose memory workloads/encoder_memory.py estimates (`gpucost memory
    # estimate`, the fleet plan's memory fit where no GPU peak was measured).
    encoder_memory: bool = False
    # The `endpoint.api` values its `with_openai.py` sends (checked by registry.check_engine): a variant on engine
    # openai asking another is refused when the variants file is read; () leaves the choice to its own
    # `with_openai.py`.
    endpoint_apis: tuple[str, ...] = ()

    def child(self, engine: str = "torch") -> ModuleType:
        """The child-process side on an engine (core/kinds/engines.py): `load(spec, device) -> Work`; torch's is
        `<package>.child`, another engine's `<package>.with_<engine>`."""

        return engines.engine(engine).implementation(self.package)

    def launch(self) -> ModuleType:
        """The launcher side: `describe(workload, variant, model_path, protocol) -> Described`,
        `default_model(root)`."""
        return importlib.import_module(f"{self.package}.launch")

    def output_rules(self) -> ModuleType:
        """The pure rules of what this kind delivers (`Output`), checked to offer every member of the interface as a
        Kind is checked when loaded; only the kind that owns the output has them."""
        return checked_output(importlib.import_module(f"{self.package}.output"))

    def module(self, name: str) -> ModuleType:
        """A module of the kind's own folder by name (the classifier's demo inputs, its memory probe), imported when
        asked: how the CLI reaches a kind without importing its folder."""
        return importlib.import_module(f"{self.package}.{name}")

    def settings_record(self) -> type[Settings]:
        """The settings its variants declare (`settings_record` of its package)."""
        return settings_record(self.package)

    def workload_record(self) -> type[WorkloadRecord]:
        """The workload record its launcher describes and its child reads (`workload_record` of its package)."""
        return workload_record(self.package)


def settings_record(package: str) -> type[Settings]:
    """The settings a kind's package declares: `<package>.settings.Settings` where the kind brings settings of its own
    (a subclass of core/kinds/settings.Settings), else the record every built-in kind reads."""
    return _declared_record(package, "settings", "Settings", Settings)


def workload_record(package: str) -> type[WorkloadRecord]:
    """The workload record a kind's package declares: `<package>.workload.Workload` where its child needs more than
    the kind-neutral record (a subclass of core/kinds/workload.WorkloadRecord), else that record."""
    return _declared_record(package, "workload", "Workload", WorkloadRecord)


def _declared_record(package: str, module_name: str, name: str, default: type) -> type:
    """A kind's own subclass of a record, `<package>.<module_name>.<name>`, or `default` where it declares none."""
    module = f"{package}.{module_name}"
    if not package or importlib.util.find_spec(module) is None:
        return default
    record = getattr(importlib.import_module(module), name)
    if not (isinstance(record, type) and issubclass(record, default)):
        raise TypeError(f"{module}.{name} must subclass {default.__module__}.{default.__name__}")
    return record


class Output(Protocol):
    """What an output module (`<package>.output`) offers: one per thing a pass delivers (labels, embeddings, text).

    Everything the launcher, `gpucost rejudge`, the recorder and the report need to know about an output, so that
    none of them chooses by its name. Pure: no torch, no mlflow (the store's side fetches `FILES` and hands over a
    folder)."""

    NAME: str  # the `acceptance.output` value
    FILE: str  # the deliverable file an attempt's note points to
    FILES: tuple[str, ...]  # every file a pass exports for it: what a reference is read back from
    MAIN_METRIC: str  # the metric a run's tags name when the protocol declares no main_metric
    REFERENCE_CHECKS: tuple[str, ...]  # the checks a comparison with the reference adds or replaces
    QUALITY_CHECKS: tuple[str, ...]  # its checks whose failure the quality verdict names (core/judging/judge.py);
    # the label checks every output read as labels shares are the judge's own
    COLUMNS: tuple[str, ...]  # its quality metrics the attempts table shows a column for
    FIELDS: dict[str, dict | None]  # its bar's protocol fields, which only its protocols may declare: each dotted
    # name (acceptance.reference.cosine_min) with what it holds, None a value, a mapping a section and its fields
    # (core/inputs/protocol_fields.py's tree); another output's protocol setting one is refused
    AUDITED: bool  # whether a deliverable without gold labels is audited by the reference variant
    LIKE_FOR_LIKE: tuple[str, ...]  # the settings that decide what is asked: the reference's, or not comparable
    SECTION: str  # the protocol section its task needs (`generation:`), "" when none
    SECTION_KEYS: tuple[str, ...]  # the keys that section may hold (the protocol's field tree); only with a SECTION
    NO_SAMPLING: str  # how the built-in kinds deliver it without sampling, for the report's scope ("a forward pass");
    # "" when it names none
    FROM_USER_CODE: bool  # whether a user's module may deliver it
    EXAMPLE_PROTOCOL: str  # a shipped protocol judging it ("" when the default one does)

    def acceptance(self, fields, metric: str) -> object:
        """The protocol's `acceptance:` bar for this output (core/inputs/acceptance.Acceptance; fields of its own in a
        record of its own, held in `bar`), refused in one line."""

    def task(self, section, where: str, output: str) -> object:
        """Its `SECTION` of the protocol read into the task record (`record() -> dict`: what the manifest and the
        child get); refused in one line when missing or malformed, or declared by a protocol whose output (`output`)
        is another. Only an output with a SECTION is asked."""

    def scored(self, task) -> bool:
        """Whether the protocol scores labels against gold (and so needs acceptance.main_metric); `task` is the one
        its section fixed, None without one."""

    def needs_reference(self, settings: Settings, reference_settings: Settings) -> bool:
        """Whether a variant with these settings is compared with the reference variant's outputs."""

    def read_back(self, folder: Path, protocol, labels: list[str]) -> object:
        """What the pass's files in `folder` really hold; every problem a format error, nothing repaired."""

    def reference(self, run_id: str, metrics: dict, folder: Path, protocol, labels: list[str]) -> object:
        """The accepted reference pass as this output's judge needs it, from its files fetched into `folder`."""

    def judge_pass(self, given) -> object:
        """The pass's judgement (core/judging/judge.Judgement) from `given` (core/judging/judge.Judging: the pass, its
        files as read back, the protocol, the reference); its counts carry the expected and observed ids
        (core/judging/verdicts.basic_checks gives them with the format, ids and coverage checks)."""

    def judge_against_reference(self, prior: list, metrics: dict, back, reference, acceptance,
                                first: dict | None = None) -> object:
        """A pending pass judged again once its reference exists (core/judging/judge.rejudged); `first` is its first
        verdict (verdict.json), for what it kept of the corpus (the gold labels a bootstrap resamples)."""

    def preview(self, rows: list[dict], back, gold_labels: bool, folder: Path) -> dict | None:
        """The MLflow UI's preview table of the pass's outputs, None when there is none to show."""

    def merge(self, folders: list[Path], workdir: Path) -> None:
        """The lanes' files of this output as one set in the pass's folder (a lane that wrote none adds nothing)."""

    def figures(self, metrics: dict) -> str:
        """Its figures on a pass's summary line (", macro-F1 0.812"), "" when the pass has none."""

    def bar(self, acceptance) -> str:
        """The quality bar in words, for the experiment's description."""


WITH_SECTION = ("SECTION_KEYS", "task")  # the members only an output with a SECTION is asked for


def output_members(section: bool = True) -> tuple[str, ...]:
    """Every name an output module must define: the fields and functions of `Output`, in their order; for an output
    without a section (SECTION "") those only a section needs are left out."""
    functions = [name for name, value in vars(Output).items() if callable(value) and not name.startswith("_")]
    return tuple(name for name in dict.fromkeys([*Output.__annotations__, *functions])
                 if section or name not in WITH_SECTION)


def checked_output(module: ModuleType) -> ModuleType:
    """The output module as loaded, refused in one line when it lacks a member of `Output` (naming the module and
    every missing member), so a plug-in's incomplete rules fail where they load, not mid-pass."""
    missing = [name for name in output_members(bool(getattr(module, "SECTION", True))) if not hasattr(module, name)]
    if missing:
        raise GpucostError(f"output module {module.__name__} lacks {', '.join(missing)} "
                           "(gpucost_mlflow.core.kinds.base.Output)")
    return module
