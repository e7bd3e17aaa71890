"""Every field a protocol may hold, as a tree, and the refusal of any other: an unknown field is refused naming
the nearest known one, a field of another output's bar naming the output it belongs to."""

from __future__ import annotations

import copy
import difflib
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import registry

# The kind-neutral fields a protocol may hold, as a tree: a mapping is a section whose keys are checked, FREE one
# whose keys are the user's own names (the buckets), None a value (other_costs checks its entries itself). Each
# output adds its own bar's fields (`FIELDS`) and its section (`SECTION_KEYS`) through the registry (`tree()`). An
# unknown field is refused at any level, so a misspelt rule is never silently dropped.
FREE = "free"
FIELDS: dict = {
    "question": None,
    "scenario": None,
    "corpus": {"file": None, "slice_of": None, "size": None, "buckets": FREE, "labels": None, "fingerprint": None},
    "acceptance": {
        "output": None, "ids": None, "format": None, "coverage": None, "main_metric": None, "threshold": None,
        "per_bucket_threshold": None, "bootstrap": {"resamples": None, "seed": None},
        "reference": {"variant": None, "max_metric_difference": None, "min_label_agreement": None,
                      "changes_work": None},
    },
    "passes_per_variant": None,
    "max_spread_ratio": None,
    "confidence": None,
    "reproduce": None,
    "seeds": None,
    "settle": {"max_passes_per_variant": None},
    "race": {"from_round": None},
    "confirmation": {"file": None, "min_s": None},
    "max_price_age_days": None,
    "system_metrics_interval_s": None,
    "max_other_cpu_share": None,
    "min_measured_s": None,
    "min_laps": None,
    "child_imports": None,
    "cooldown_s": None,
    "min_utilisation": None,
    "alternatives": {"catalog": None, "endpoints": None, "output_tokens_per_input": None},
    "warmup": {"inputs": None, "passes": None},
    "exclusion_rule": None,
    "deadline": None,
    "plan": {"start": None, "setup_hours": None, "waiting_hours": None, "planned_restarts": None},
    "deliverables": {"expected": None, "description": None, "side_by_side": None, "per_child": None,
                     "audit": {"sample": None, "min_label_agreement": None}},
    "other_costs": None,
}


def tree() -> dict:
    """Every field a protocol may hold: the kind-neutral ones, then each output's bar fields and its section, asked
    of the outputs the registry knows now (a plug-in's too), in their order."""
    known = copy.deepcopy(FIELDS)
    for name in registry.output_names():
        for dotted, inner in registry.output(name).FIELDS.items():
            *sections, leaf = dotted.split(".")
            node = known
            for section in sections:
                node = node.setdefault(section, {})
            node[leaf] = copy.deepcopy(inner)
    known.update({name: dict.fromkeys(registry.output(owner).SECTION_KEYS)
                  for name, owner in registry.sections().items()})
    return known


def refuse_unknown(path: Path, document: dict) -> None:
    """Refuse the first field the protocol does not know, at any level, naming the nearest known one."""
    known = tree()
    _refuse_unknown(path, document, known, "", known)


def _refuse_unknown(path: Path, node: dict, known: dict, prefix: str, whole: dict) -> None:
    """Refuse the first field of this section (its known fields: known; the protocol's: whole) or of a section
    beneath it."""
    for key, value in node.items():
        dotted = f"{prefix}{key}"
        if str(key) not in known:
            raise GpucostError(f"{path}: unknown field '{dotted}'{_nearest(str(key), known, prefix, whole)}")
        inner = known[str(key)]
        if isinstance(inner, dict) and isinstance(value, dict):
            _refuse_unknown(path, value, inner, f"{dotted}.", whole)


def _nearest(key: str, known: dict, prefix: str, whole: dict) -> str:
    """The hint after an unknown field: the closest name beside it, else anywhere in the protocol (`whole`), else
    the names known where it stands."""
    beside = difflib.get_close_matches(key, list(known), n=1)
    if beside:
        return f" (did you mean '{prefix}{beside[0]}'?)"
    anywhere = {}
    for dotted in _dotted(whole, ""):
        anywhere.setdefault(dotted.rpartition(".")[2], dotted)
    elsewhere = difflib.get_close_matches(key, list(anywhere), n=1)
    if elsewhere:
        return f" (did you mean '{anywhere[elsewhere[0]]}'?)"
    return f" (known {'in ' + prefix.rstrip('.') if prefix else 'at the top level'}: {', '.join(known)})"


def _dotted(known: dict, prefix: str) -> list[str]:
    """Every known field as its dotted name, sections first then their fields."""
    names = []
    for key, inner in known.items():
        names.append(f"{prefix}{key}")
        if isinstance(inner, dict):
            names += _dotted(inner, f"{prefix}{key}.")
    return names


def refuse_other_outputs(path: Path, document: dict, output: str) -> None:
    """A field of another output's bar (cosine for embeddings, exact match for generations) is refused, not ignored."""
    owned = {dotted: name for name in registry.output_names() for dotted in registry.output(name).FIELDS}
    for dotted, owner in owned.items():
        node = document
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None and owner != output:
            raise GpucostError(f"{path}: field '{dotted}' belongs to a protocol whose acceptance.output is {owner}; "
                               f"this protocol's output is {output}")
