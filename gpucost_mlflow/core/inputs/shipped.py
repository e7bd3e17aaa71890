"""Files gpucost ships inside its package: the dated tables (the labkit price list, the device names, billing terms
and device specs, AMD's ROCm matrix snapshots), the default protocol and variants (and the example workload a variant
names). Found through importlib.resources, so an installed wheel reads them outside the checkout.

In the checkout, gpucost_mlflow/resources/{catalog,projects,examples} are links to the repository's folders (the
files users edit and the docs cite: one copy); a wheel holds the files themselves (setup.cfg, package_data). A dated
table, `<stem>-YYYY-MM-DD.csv`, is found by its stem and the newest date shipped (`newest`): shipping a newer one
beside the older needs no code change.
"""

from __future__ import annotations

import hashlib
import re
from importlib.resources import files
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

TABLES = Path("catalog")  # the dated tables, side by side
_DATED = re.compile(r"(?P<stem>.+)-(?P<date>\d{4}-\d{2}-\d{2})\.csv")
PROTOCOL = Path("projects/protocol.yaml")
VARIANTS = Path("projects/variants.yaml")


def shipped(relative: Path) -> Path:
    """The package's copy of a repository-relative file or folder (a wheel installs the package as plain files)."""
    return Path(str(files("gpucost_mlflow").joinpath("resources", *relative.parts)))


def locked_protocol(default: Path, digest: str) -> Path | None:
    """Among the protocols beside the default one (`protocol*.yaml` in its folder), the file whose bytes have this
    digest: an experiment locked to a default the project has since changed keeps its own file (issue 61); None when
    no such file is there."""
    for path in sorted(default.parent.glob("protocol*.yaml")):
        if hashlib.sha256(path.read_bytes()).hexdigest() == digest:
            return path
    return None


def table_date(path: Path) -> str:
    """The date a dated table's file name carries (rocm-framework-matrix-2025-11-26.csv -> 2025-11-26)."""
    match = _DATED.fullmatch(path.name)
    if not match:
        raise GpucostError(f"{path}: not a dated table (<name>-YYYY-MM-DD.csv)")
    return match["date"]


def newest(stem: str, folder: Path | None = None) -> Path:
    """The newest `<stem>-YYYY-MM-DD.csv` in folder (default: the shipped tables): a newer table is read once it is
    there, with no code naming its date."""
    where = shipped(TABLES) if folder is None else folder
    dates = sorted(match["date"] for path in where.glob(f"{stem}-*.csv")
                   if (match := _DATED.fullmatch(path.name)) and match["stem"] == stem)
    if not dates:
        raise GpucostError(f"{where}: no {stem} table ({stem}-YYYY-MM-DD.csv)")
    return where / f"{stem}-{dates[-1]}.csv"


def _shipped_table(stem: str) -> Path:
    """The newest shipped `stem` table, as the repository-relative path `shipped` and `default_file` take."""
    return TABLES / newest(stem).name


CATALOG = _shipped_table("labkit")
# What `gpucost catalog import` maps and bills by (docs/catalogs.md): dated, editable, extended with the user's own.
DEVICE_NAMES = _shipped_table("device-names")
BILLING_TERMS = _shipped_table("billing-terms")
# What `gpucost fleet plan` bounds an offer by (docs/catalogs.md): each GPU type's dense peaks, memory and bandwidth.
DEVICE_SPECS = _shipped_table("device-specs")
DEFAULTS = (CATALOG, PROTOCOL, VARIANTS)


def default_file(path: Path, root: Path = Path(".")) -> Path:
    """path under root; a default file (DEFAULTS) missing there is the copy shipped in the package."""
    found = path if path.is_absolute() else root / path
    return shipped(path) if path in DEFAULTS and not found.exists() else found
