"""Money amounts' one step: every amount gpucost states (a price, a plan, a bill, a protocol's other cost) is a
Decimal rounded to the cent. Beside errors.py, below every sub-package, so the inputs that read an amount need not
import the money rules that use it."""

from __future__ import annotations

from decimal import Decimal

CENT = Decimal("0.01")
