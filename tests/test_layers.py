"""The floor rule of docs/architecture.md, read from the imports of every module (no module is imported)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "gpucost_mlflow"
# layer folder -> top-level names its modules may never import
FORBIDDEN = {
    "core": ("torch", "mlflow", "sky", "gpuhunt", "gpucost_mlflow.workloads", "gpucost_mlflow.execution", "gpucost_mlflow.tracking",
             "gpucost_mlflow.flow", "gpucost_mlflow.report", "gpucost_mlflow.market", "gpucost_mlflow.fleet"),
    "market": ("torch", "mlflow", "gpucost_mlflow.execution", "gpucost_mlflow.tracking", "gpucost_mlflow.flow",
               "gpucost_mlflow.report", "gpucost_mlflow.fleet"),
    "execution": ("mlflow", "sky", "gpucost_mlflow.workloads", "gpucost_mlflow.tracking", "gpucost_mlflow.flow", "gpucost_mlflow.report",
                  "gpucost_mlflow.fleet"),
    "tracking": ("torch", "sky", "gpucost_mlflow.execution", "gpucost_mlflow.flow", "gpucost_mlflow.report",
                 "gpucost_mlflow.fleet"),
    "flow": ("sky", "gpucost_mlflow.report", "gpucost_mlflow.fleet"),
    # The fleet launches and follows campaigns: it never measures (no torch) nor reports.
    "fleet": ("torch", "gpucost_mlflow.execution", "gpucost_mlflow.report"),
    # The report decides from the evidence tracking read (issue 54): it never measures, runs a pass or talks to MLflow.
    "report": ("torch", "mlflow", "sky", "gpuhunt", "gpucost_mlflow.execution", "gpucost_mlflow.flow",
               "gpucost_mlflow.fleet", "gpucost_mlflow.market"),
}


@functools.cache
def syntax(path: Path) -> ast.Module:
    """The file's syntax tree, parsed once per worker: a dozen tests here read the same ~225 modules."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the file's syntax tree, at any depth (ast.walk's order), listed once per worker."""
    return tuple(ast.walk(syntax(path)))


def imported(path: Path) -> set[str]:
    """Every module name the file imports, at any depth (function-local imports included)."""
    names = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _core_parts(path: Path) -> set[str]:
    """The parts of core/ (a sub-package, or a module beside them) the file imports, at any depth."""
    parts = {name.split(".")[2] for name in imported(path) if name.startswith("gpucost_mlflow.core.")}
    for node in nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module == "gpucost_mlflow.core" and not node.level:
            parts.update(alias.name for alias in node.names)
    return parts


def test_the_parts_of_core_import_one_way():
    """No import loop between core/'s sub-packages (issue 54): inputs (protocols, corpora, variants) lies below money
    and judging, which read it and are never read by it, function-local imports included."""
    core = PACKAGE / "core"
    arrows: dict[str, set[str]] = {}
    for path in core.rglob("*.py"):
        part = path.relative_to(core).parts[0].removesuffix(".py")
        arrows.setdefault(part, set()).update(_core_parts(path) - {part})
    loops = set()

    def follow(trail: tuple[str, ...]) -> None:
        for after in sorted(arrows.get(trail[-1], ())):
            if after == trail[0]:
                loops.add(" -> ".join((*trail, after)))
            elif after not in trail:
                follow((*trail, after))

    for start in sorted(arrows):
        follow((start,))
    assert not loops, "; ".join(sorted(loops))


# Inside a workload kind's folder the floor rule holds per file: its child code never imports mlflow, and its
# __init__ (the KIND the registry loads through its entry point) imports neither torch nor mlflow.
FORBIDDEN_IN_WORKLOADS = {"child.py": ("mlflow", "gpucost_mlflow.tracking", "gpucost_mlflow.flow", "gpucost_mlflow.report"),
                          "launch.py": ("mlflow", "gpucost_mlflow.tracking", "gpucost_mlflow.report"),
                          "__init__.py": ("torch", "mlflow", "gpucost_mlflow.execution"),
                          "output.py": ("torch", "mlflow", "gpucost_mlflow.execution", "gpucost_mlflow.tracking",
                                        "gpucost_mlflow.flow", "gpucost_mlflow.report")}


def test_each_workload_file_keeps_the_floor_rule_of_its_side():
    broken = []
    for path in sorted((PACKAGE / "workloads").rglob("*.py")):
        for name in imported(path):
            rule = FORBIDDEN_IN_WORKLOADS.get(path.name, FORBIDDEN_IN_WORKLOADS["child.py"])  # engines: child side
            if any(name == banned or name.startswith(banned + ".") for banned in rule):
                broken.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not broken, "; ".join(broken)


def test_the_harness_and_the_rules_name_no_kinds_folder():
    """core/ and execution/ know kinds only through core/kinds (entry points): not one import of workloads/, and not
    its package named in a string either (the registry names no kind's folder; the pass's spec carries its module)."""
    named = [f"{path.relative_to(PACKAGE)}:{number}" for layer in ("core", "execution")
             for path in sorted((PACKAGE / layer).rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if "gpucost_mlflow.workloads" in line or "from gpucost_mlflow import workloads" in line]
    assert not named, "; ".join(named)


def _modules(path: Path) -> set[str]:
    """Every module the file imports, a `from gpucost_mlflow.workloads import x` counted as the module it names."""
    names = imported(path)
    for node in nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module == "gpucost_mlflow.workloads" and not node.level:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _kinds_folders() -> list[str]:
    """The shipped kinds' folders under workloads/ (each a package: its __init__ declares the KIND)."""
    return sorted(path.parent.name for path in (PACKAGE / "workloads").glob("*/__init__.py"))


def test_no_kind_imports_another_kinds_folder_and_the_cli_none():
    """What several kinds share lives beside their folders (workloads/minilm.py, encoder_flops.py, ...), and another
    kind's output is reached through the registry; the CLI reaches a kind's own code only through core/kinds/registry."""
    folders = _kinds_folders()
    broken = []
    for path in sorted((PACKAGE / "workloads").rglob("*.py")):
        own = path.relative_to(PACKAGE / "workloads").parts[0]
        broken += [f"{path.relative_to(PACKAGE)} imports {name}" for name in _modules(path)
                   for other in folders if other != own and own in folders
                   and (name == f"gpucost_mlflow.workloads.{other}" or name.startswith(f"gpucost_mlflow.workloads.{other}."))]
    for path in sorted((PACKAGE / "cli").rglob("*.py")):
        broken += [f"{path.relative_to(PACKAGE)} imports {name}" for name in _modules(path) for kind in folders
                   if name == f"gpucost_mlflow.workloads.{kind}" or name.startswith(f"gpucost_mlflow.workloads.{kind}.")]
    assert folders and not broken, "; ".join(broken)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_each_layer_imports_only_what_lies_below_it(layer):
    broken = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in imported(path):
            if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN[layer]):
                broken.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not broken, "; ".join(broken)


# What report/ reads of tracking/: the attempts and evidence records, the decision run's record, and the names and
# texts of the store's schema; never a module that holds a client (issue 54: the report is pure functions of them).
REPORT_READS_OF_TRACKING = {"attempts_table", "evidence", "decision_record", "schema", "ui", "descriptions", "limits"}


def _tracking_modules(path: Path) -> set[str]:
    """The modules of tracking/ a file imports (`from gpucost_mlflow.tracking import x` counted as x)."""
    found = set()
    for node in nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module == "gpucost_mlflow.tracking" and not node.level:
            found.update(alias.name for alias in node.names)
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        found.update(name.split(".")[2] for name in names if name.startswith("gpucost_mlflow.tracking."))
    return found


def test_the_report_reads_the_evidence_and_never_holds_a_client():
    """report/ turns the evidence read once (tracking/evidence.py) and the decision into the Report and the decision
    run's record as pure functions: it imports no tracking module that opens the store, and no function of it takes
    a client."""
    broken = []
    for path in sorted((PACKAGE / "report").rglob("*.py")):
        broken += [f"{path.relative_to(PACKAGE)} imports tracking.{name}"
                   for name in sorted(_tracking_modules(path) - REPORT_READS_OF_TRACKING)]
        broken += [f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} takes a client"
                   for node in nodes(path)
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and "client" in [arg.arg for arg in node.args.args + node.args.kwonlyargs]]
    assert not broken, "; ".join(broken)


STORE_CALLS = {"create_run", "log_batch", "log_metric", "log_param", "set_tag", "set_terminated", "log_artifact",
               "log_artifacts", "log_inputs", "update_run", "search_runs", "get_run", "get_experiment",
               "get_experiment_by_name", "create_experiment", "set_experiment_tag", "delete_run", "download_artifacts"}


def test_every_mlflow_call_lives_in_tracking():
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "tracking":
            continue
        for node in nodes(path):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STORE_CALLS:
                outside.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.func.attr}")
    assert not outside, "; ".join(outside)


def test_no_mlflow_entity_is_built_outside_tracking():
    """The flow hands a pass's run plain records (tracking/pass_run.PassRun, `Ending`): a run, tag, metric, param or
    dataset entity of MLflow is imported only under tracking/ (issue 54)."""
    outside = [str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.py"))
               if path.relative_to(PACKAGE).parts[0] != "tracking"
               and any(name == "mlflow.entities" or name.startswith("mlflow.entities.") for name in imported(path))]
    assert not outside, ", ".join(outside)


def test_statuses_are_spelled_only_in_the_status_enum():
    """One vocabulary: no module but core/judging/status.py writes an attempt status as a bare string literal."""
    words = {"accepted", "rejected", "pending", "failed", "excluded", "completed"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() == "core/judging/status.py":
            continue
        for node in nodes(path):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Constant) and side.value in words:
                        found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {side.value!r}")
    assert not found, "; ".join(found)


STRING_KEY = re.compile(r"""\[["'][a-z_0-9.]+["']\]|\.get\(["']""")  # row["status"], row.get('status': read by name
STRING_KEYS_IN_REPORT = 0  # issue 65: 69 before the report read its attempts' attributes and the decision; none now


def test_the_report_reads_records_by_attribute_not_by_string_key():
    """report/ reads an attempt, a configuration and the decision by attribute: string-key reads (`x["name"]`,
    `x.get("name"`, either quote) are counted, as `grep -rnE` counts them, and held at none."""
    found = [f"{path.relative_to(PACKAGE)}:{number}" for path in sorted((PACKAGE / "report").glob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if STRING_KEY.search(line)]
    assert len(found) <= STRING_KEYS_IN_REPORT, ", ".join(found)


def _literals(path: Path) -> list[ast.Constant]:
    """The string constants of a module that are not docstrings."""
    docs = {id(node.body[0].value) for node in nodes(path)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node for node in nodes(path)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]


def test_every_pass_metric_and_tag_is_named_by_its_one_owner():
    """A pass metric is spelled only in core/names.py; a gpucost tag key only in tracking/schema.py (and the
    energy tags the child writes, in core/measurement/energy.py, where the child can import them)."""
    from gpucost_mlflow.core import names
    from gpucost_mlflow.core.kinds import plugins

    metrics = {value for key, value in vars(names).items() if key.isupper() and isinstance(value, str)}
    groups = {plugins.WORKLOADS, plugins.ENGINES}  # entry-point groups, not tags
    owners = {"core/names.py", "tracking/schema.py", "core/measurement/energy.py"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in owners:
            continue
        found += [f"{where}:{node.lineno} {node.value}" for node in _literals(path)
                  if node.value in metrics or (node.value.startswith("gpucost.") and node.value not in groups)]
    assert not found, "; ".join(found)


def test_a_function_local_import_of_the_package_says_why_it_is_local():
    """An import of the package's own modules inside a function stays only where it breaks a real cycle or defers a
    heavy import (torch, transformers, mlflow, an engine, numpy for the CLI), with a comment on it saying which."""
    silent = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        functions = [node for node in nodes(path)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in {id(n): n for f in functions for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}.values():
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            said = " ".join(lines[node.lineno - 1:node.end_lineno]).partition("#")[2]
            if any(name.startswith("gpucost_mlflow") for name in names) and not any(
                    word in said for word in ("defer", "cycle", "torch", "imports")):
                silent.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not silent, "; ".join(silent)


def test_no_function_takes_more_than_eight_parameters():
    """Parameters travel grouped in the records they belong to (issue 40). A click command takes one parameter per
    option, as click users expect, and is left out."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in nodes(path):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not any(
                    "click" in ast.unparse(decorator) or "command" in ast.unparse(decorator)
                    for decorator in node.decorator_list):
                arguments = node.args
                count = len(arguments.posonlyargs + arguments.args + arguments.kwonlyargs)
                count -= bool(arguments.args) and arguments.args[0].arg in ("self", "cls")
                if count > 8:
                    found[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = count
    assert not found, found
