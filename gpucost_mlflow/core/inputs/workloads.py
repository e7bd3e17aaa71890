"""The workload a variant runs: the built-in classifier, built-in sentence embeddings, or the user's own code.

`workload: python:PATH_OR_MODULE` names a module with `load(settings, device)` and `infer(state, texts)`
(and optionally `flops(batch_token_counts)`). It is checked here by reading its source, never by running
it: a missing file, a module that cannot be found or one without `load` or `infer` is a one-line error
when the variants are loaded, before anything is recorded.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.fingerprints import sha256_file
from gpucost_mlflow.core.kinds import registry

DEFAULT = registry.DEFAULT
PYTHON = f"{registry.PYTHON}:"
REQUIRED = {"load": 2, "infer": 2}  # the functions user code must define, and how many arguments they take
OPTIONAL = ("flops",)


@dataclass(frozen=True)
class Workload:
    """A parsed `workload:` value; for user code, where its source is and what it declares."""

    declared: str  # as written in the variants file: the value that is part of a configuration's identity
    kind: str  # a registry kind: classification | embeddings | generation | python (core/kinds/registry.py)
    source: str = ""  # python: the module's source file, resolved
    module: str = ""  # python: the importable module name ("" when declared as a file path)
    declares_flops: bool = False

    @property
    def output(self) -> str:
        """labels, embeddings or generations for a built-in workload; "" for user code (told by what its infer
        returns)."""
        return registry.outputs().get(self.kind, "")

    def code_digest(self) -> str:
        """sha256 of the user's module file ("" for a built-in workload): a change to it is a new configuration."""
        return sha256_file(Path(self.source)) if self.source else ""


def parse(text, base: Path, where: str = "workload") -> Workload:
    """A workload value checked: a built-in name, or python: with a readable module that defines load and infer.

    A relative path is read from `base` (the variants file's folder)."""
    if not isinstance(text, str) or not text.strip():
        raise GpucostError(f"{where} needs workload as one of {', '.join(registry.built_in())} or "
                           "python:PATH_OR_MODULE")
    text = text.strip()
    if text in registry.built_in():
        return Workload(text, text)
    if not text.startswith(PYTHON):
        raise GpucostError(f"{where} has workload={text!r} (allowed: {', '.join(registry.built_in())}, "
                           "python:PATH_OR_MODULE)")
    target = text[len(PYTHON):].strip()
    if not target:
        raise GpucostError(f"{where} has workload 'python:' without a module path or name")
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = (base / target).resolve() if not Path(target).is_absolute() else Path(target)
        if not path.is_file():
            raise GpucostError(f"{where} has workload {text}: no such file {path} "
                               "(a relative path is read from the variants file's folder)")
        module = ""
    else:
        path, module = _module_source(target, text, where), target
    names = _top_level_names(path, text, where)
    for name, arity in REQUIRED.items():
        if name not in names:
            raise GpucostError(f"{where} has workload {text}: {path.name} defines no {name}() "
                               "(user code needs load(settings, device) and infer(state, texts))")
        if names[name] is not None and names[name] < arity:
            raise GpucostError(f"{where} has workload {text}: {name}() in {path.name} takes {names[name]} "
                               f"argument(s), the harness passes {arity}")
    return Workload(text, registry.PYTHON, str(path), module, "flops" in names)


def relocated(text, source: Path, target: Path):
    """A workload value copied from a variants file in `source` to one in `target`: a relative python: path is
    rewritten to point at the same file from the new folder; anything else is kept as it is."""
    if not isinstance(text, str) or not text.strip().startswith(PYTHON):
        return text
    target_path = text.strip()[len(PYTHON):].strip()
    if Path(target_path).is_absolute() or not (target_path.endswith(".py") or "/" in target_path
                                               or "\\" in target_path):
        return text
    moved = os.path.relpath((source / target_path).resolve(), target.resolve())
    return PYTHON + Path(moved).as_posix()


def _module_source(name: str, text: str, where: str) -> Path:
    """The source file of an importable module, found without running it (its parent packages may be imported)."""
    if not all(part.isidentifier() for part in name.split(".")):
        raise GpucostError(f"{where} has workload {text}: '{name}' is neither a .py path nor a module name")
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise GpucostError(f"{where} has workload {text}: no module '{name}' can be imported "
                           "(install it, put it on PYTHONPATH, or give the path of its .py file)")
    if not spec.origin or not spec.origin.endswith(".py"):
        raise GpucostError(f"{where} has workload {text}: module '{name}' has no Python source file")
    return Path(spec.origin)


def _top_level_names(path: Path, text: str, where: str) -> dict[str, int | None]:
    """Names the module defines at top level: functions with their positional arity, others with None."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise GpucostError(f"{where} has workload {text}: cannot read {path} ({exc})") from None
    except SyntaxError as exc:
        raise GpucostError(f"{where} has workload {text}: {path.name} line {exc.lineno}: {exc.msg}") from None
    names: dict[str, int | None] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            positional = len(args.posonlyargs) + len(args.args)
            names[node.name] = None if args.vararg else positional
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update({t.id: None for t in targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(alias.asname or alias.name).split(".")[0]: None for alias in node.names})
    return names


def check_output(workload: Workload, output: str, protocol_path: str) -> None:
    """A built-in workload must deliver what the protocol judges; user code may deliver labels or embeddings."""
    if not workload.output and not registry.output(output).FROM_USER_CODE:
        raise GpucostError(f"workload {workload.declared} delivers labels or embeddings, but {protocol_path} judges "
                           f"{output} (acceptance.output); {output} come from workload: "
                           f"{registry.for_output(output).name}")
    if workload.output and workload.output != output:
        example = registry.output(workload.output).EXAMPLE_PROTOCOL
        raise GpucostError(f"workload {workload.declared} delivers {workload.output}, but {protocol_path} judges "
                           f"{output} (acceptance.output); use a protocol written for {workload.output}"
                           + (f", e.g. {example}" if example else ""))
