"""Files gpucost ships inside its package: the labkit price list, AMD's ROCm matrix snapshots, the default protocol
and variants (and the example workload a variant names). Found through importlib.resources, so an installed wheel
reads them outside the checkout.

In the checkout, gpucost_mlflow/resources/{catalog,projects,examples} are links to the repository's folders (the
files users edit and the docs cite: one copy); a wheel holds the files themselves (setup.cfg, package_data).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

CATALOG = Path("catalog/labkit-2026-09-24.csv")
PROTOCOL = Path("projects/protocol.yaml")
VARIANTS = Path("projects/variants.yaml")
ROCM_MATRICES = Path("catalog")  # rocm-framework-matrix-<date>.csv, side by side
# What `gpucost catalog import` maps and bills by (docs/catalogs.md): dated, editable, extended with the user's own.
DEVICE_NAMES = Path("catalog/device-names-2026-12-02.csv")
BILLING_TERMS = Path("catalog/billing-terms-2026-12-02.csv")
# What `gpucost fleet plan` bounds an offer by (docs/catalogs.md): each GPU type's dense peaks, memory and bandwidth.
DEVICE_SPECS = Path("catalog/device-specs-2026-12-03.csv")
DEFAULTS = (CATALOG, PROTOCOL, VARIANTS)


def shipped(relative: Path) -> Path:
    """The package's copy of a repository-relative file or folder (a wheel installs the package as plain files)."""
    return Path(str(files("gpucost_mlflow").joinpath("resources", *relative.parts)))


def default_file(path: Path, root: Path = Path(".")) -> Path:
    """path under root; a default file (DEFAULTS) missing there is the copy shipped in the package."""
    found = path if path.is_absolute() else root / path
    return shipped(path) if path in DEFAULTS and not found.exists() else found
