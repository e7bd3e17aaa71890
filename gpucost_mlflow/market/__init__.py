"""Market catalogs read through their own libraries (SkyPilot, gpuhunt): the only code that imports them.

Each module returns plain offers (core/money/market.py `Offer`) and the date of what it read; the rows, the names
table, the billing terms and the spot rule are core's.
"""

from __future__ import annotations

from gpucost_mlflow.core.errors import GpucostError

GUIDES = {"fleet": "docs/fleet.md",
          "skypilot": "in a venv of its own: make install builds .venv-market; docs/catalogs.md",
          "gpuhunt": "in a venv of its own: make install builds .venv-market; docs/catalogs.md"}


def require(module: str, extra: str):
    """The library, or a one-line error with the command that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise GpucostError(f"{module} is not installed here: pip install 'gpucost-mlflow[{extra}]' "
                           f"({GUIDES.get(extra, 'docs/catalogs.md')})") from None
