"""No orphans: a process gpucost starts (a pass's child, the server a pass starts) is killed when its parent dies,
so nothing keeps the device busy after a killed pass."""

from __future__ import annotations

import signal


def die_with_parent() -> None:
    """Run between fork and exec (preexec_fn): SIGKILL this process when its parent dies (Linux PR_SET_PDEATHSIG)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
