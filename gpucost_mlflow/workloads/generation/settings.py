"""A generation variant's own settings: the new tokens it may produce, at most the protocol's `max_new_tokens`.

0 (the default) is the protocol's number. A variant asking for fewer does other work than the reference: judged
against it, it is not comparable unless the protocol declares `max_new_tokens` a change of work
(core/judging/like_for_like.py). More than the protocol's is refused when the pass is described, since every output
is read back against the protocol's ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.kinds import settings

PROTOCOLS = 0  # max_new_tokens: the protocol's generation.max_new_tokens


@dataclass(frozen=True)
class Settings(settings.Settings):
    max_new_tokens: int = PROTOCOLS

    SPARSE = (*settings.Settings.SPARSE, "max_new_tokens")  # only where a variant sets its own

    def __post_init__(self):
        super().__post_init__()
        value = self.max_new_tokens
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise GpucostError(f"needs max_new_tokens as a whole number >= 1 (or 0: the protocol's), got {value!r}")
