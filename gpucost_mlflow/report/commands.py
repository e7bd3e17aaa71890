"""The exact gpucost commands a report gives for acting on its decision: its confirmation, and its second stage (or
why there is none)."""

from __future__ import annotations

import shlex
from pathlib import Path

from gpucost_mlflow.core.inputs.protocol import Protocol
from gpucost_mlflow.core.money.catalog import Catalog


def settle_command(experiment: str, protocol: Protocol, protocol_path: Path, catalog: Catalog,
                   variants_path: Path | None, undecided: list | None = None) -> str:
    """The exact command of the protocol's second stage for this decision, with its ceiling; or why there is none
    (not declared, or already run to its ceiling); '' when nothing is undecided."""
    if not undecided:
        return ""
    if protocol.settle_max_passes is None:
        return ("the protocol declares no second stage (settle: {max_passes_per_variant: N}): more passes under it "
                "would be peeking; a new protocol declaring one, in a new experiment, would")
    done = max((len(a.configuration.durations.values) for a in undecided or []), default=0)
    if done >= protocol.settle_max_passes:
        return (f"the protocol's second stage has run them to its {protocol.settle_max_passes} passes per "
                "configuration: more under this protocol would be peeking; a new protocol, in a new experiment, would")
    settles = command("campaign --settle", experiment, protocol_path, variants_path, catalog)
    devices = list(dict.fromkeys(a.configuration.device for a in undecided))
    if len(devices) > 1:
        fleet = command("fleet launch --settle", experiment, protocol_path, variants_path, catalog)
        return (f"`{fleet} --max-hours H --max-cost USD` runs each device's own configurations on its GPU type "
                f"({', '.join(devices)}), or `{settles}` on a machine with each; up to the protocol's "
                f"{protocol.settle_max_passes} passes per configuration, the decision read once every device has "
                "reported")
    return (f"`{settles}` runs them, up to the protocol's {protocol.settle_max_passes} passes per "
            "configuration, and reads the decision once")


def command(verb: str, experiment: str, protocol_path: Path, variants_path: Path | None, catalog: Catalog) -> str:
    """The exact gpucost command (`campaign --settle`, `confirm`) that acts on this decision: its experiment,
    protocol, variants file and catalogs."""
    parts = [f"gpucost {verb} --experiment", shlex.quote(experiment), "--protocol", shlex.quote(str(protocol_path))]
    if variants_path is not None:
        parts += ["--variants-file", shlex.quote(str(variants_path))]
    parts += [f"--catalog {shlex.quote(path)}" for path in catalog.path.split(", ") if path]
    return " ".join(parts)
