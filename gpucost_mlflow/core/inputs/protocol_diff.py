"""Which fields of a protocol differ from the one locked on an experiment, and whether a report may use it.

The lock compares digests (the file's bytes); a person needs the fields. `changed_fields` parses both YAML texts
and names every dotted field added, removed or changed; `against_lock` is the report's rule on top of it: the
locked protocol (or no lock) reports as usual, another one is refused in one line naming those fields unless the
user asked for a what-if, which is then labelled with them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.inputs import yaml_text

KINDS = ("changed", "added", "removed")


@dataclass(frozen=True)
class Difference:
    """One dotted field (`plan.start`, `other_costs[2].amount`) and how it differs: changed, added or removed."""
    field: str
    kind: str


def _leaves(node, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(dotted field, value) of every leaf: mappings by key, lists by 1-based index, an empty one a leaf itself."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(node, list) and node:
        for index, value in enumerate(node, 1):
            yield from _leaves(value, f"{prefix}[{index}]")
    else:
        yield prefix, node


def _parse(text: str, what: str) -> dict:
    """The YAML mapping of a protocol text; anything else is a one-line error naming which text."""
    try:
        document = yaml_text.safe_load(text)
    except yaml.YAMLError as exc:
        raise GpucostError(f"{what}: not valid YAML ({one_line(exc)})") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise GpucostError(f"{what}: expected a mapping of protocol fields")
    return document


def changed_fields(locked_text: str, text: str) -> list[Difference]:
    """Every dotted field that differs between two protocol texts, in the locked text's order, then the added ones."""
    before = dict(_leaves(_parse(locked_text, "the locked protocol")))
    after = dict(_leaves(_parse(text, "the protocol")))
    found = [Difference(name, "removed" if name not in after else "changed")
             for name, value in before.items() if name not in after or after[name] != value]
    return found + [Difference(name, "added") for name in after if name not in before]


def describe(differences: list[Difference]) -> str:
    """`changed deadline, plan.start; added other_costs[1].label`, or what differs when no field does."""
    parts = [f"{kind} {', '.join(d.field for d in differences if d.kind == kind)}"
             for kind in KINDS if any(d.kind == kind for d in differences)]
    return "; ".join(parts) or "no field differs (comments or layout only)"


def against_lock(path: Path, digest: str, text: str, experiment: str, locked_digest: str, locked_text: str,
                 *, what_if: bool) -> str:
    """'' when the protocol is the one locked on the experiment (or none is locked); when it differs, what changed
    (`changed deadline`) if what_if allows it, otherwise a GpucostError naming the changed fields."""
    if not locked_digest or digest == locked_digest:
        return ""
    changes = describe(changed_fields(locked_text, text)) if locked_text else \
        "fields not known: the locked protocol's text is not stored on the experiment"
    if what_if:
        return changes
    raise GpucostError(f"{path.name} differs from the protocol locked on experiment '{experiment}' "
                       f"({locked_digest[:12]}): {changes}; report under the locked protocol, or pass "
                       "--what-if-protocol FILE to see a what-if")
