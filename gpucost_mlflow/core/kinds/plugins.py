"""Workload kinds and engines from other packages, found as MLflow finds its plug-ins: through Python entry points.

gpucost's own kinds are declared the same way, in its setup.cfg, so the registry names no kind's folder and the harness
below it imports none. A package declares `[project.entry-points."gpucost.workloads"] toy = "toy_kind:KIND"` (a
`base.Kind`) or `[project.entry-points."gpucost.engines"] myengine = "my_engine:ENGINE"` (an `engines.Engine`);
installing it is all it takes. The environment variable GPUCOST_WORKLOADS ("name:output:package", comma-separated),
which a pass's child inherits, still declares a kind without installing anything: an override, refused in one line when
an item is not of that form, never silently dropped.
"""

from __future__ import annotations

import configparser
import functools
import importlib.metadata
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

WORKLOADS = "gpucost.workloads"
ENGINES = "gpucost.engines"
ENVIRONMENT = "GPUCOST_WORKLOADS"


OWN = "gpucost-mlflow"  # this package's distribution: the kinds it ships are declared like any other's
# Where the package runs from its checkout without being installed (PYTHONPATH, as benchmarks/device_check.sh does
# on an offline GPU machine), its own entry points are read from the same lines of the checkout's setup.cfg.
SETUP_CFG = Path(__file__).resolve().parents[3] / "setup.cfg"


def _distribution(point: importlib.metadata.EntryPoint) -> str:
    """The normalised name of the distribution declaring an entry point."""
    return (point.dist.name if point.dist is not None else "").lower().replace("_", "-")


@functools.cache
def declared(group: str, of: type, own: bool = False) -> tuple:
    """The objects installed packages declare in an entry-point group, each checked to be an `of`: this package's own
    (`own`) or those of every other package; read once per process (the installed packages do not change under it).
    A point that does not load is refused in one line."""
    found = []
    points = [point for point in importlib.metadata.entry_points(group=group) if (_distribution(point) == OWN) == own]
    if own and not points:
        points = checkout_points(group)
    for point in sorted(points, key=lambda point: point.name):
        try:
            value = point.load()
        except Exception as exc:  # a plug-in's own import error, whatever it is, told as the plug-in's
            raise GpucostError(f"entry point {point.name} = {point.value} ({group}) does not load: {exc}") from exc
        if not isinstance(value, of):
            raise GpucostError(f"entry point {point.name} = {point.value} ({group}) is a {type(value).__name__}, "
                               f"not a {of.__name__}")
        found.append(value)
    return tuple(found)


def checkout_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """This package's entry points of a group as its checkout's setup.cfg declares them; none outside a checkout."""
    setup = SETUP_CFG
    if not setup.is_file():
        return []
    parser = configparser.ConfigParser()
    parser.read(setup, encoding="utf-8")
    lines = parser.get("options.entry_points", group, fallback="").splitlines()
    return [importlib.metadata.EntryPoint(name.strip(), value.strip(), group)
            for name, _, value in (line.partition("=") for line in lines) if value.strip()]


def environment_items(text: str) -> list[tuple[str, str, str]]:
    """GPUCOST_WORKLOADS's items as (name, output, package); a malformed item is refused, naming it."""
    items = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        fields = [field.strip() for field in item.split(":")]
        if len(fields) != 3 or not all(fields):
            raise GpucostError(f"{ENVIRONMENT}: {item!r} is not name:output:package (comma-separated for several)")
        items.append((fields[0], fields[1], fields[2]))
    return items
