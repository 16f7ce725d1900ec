"""How loop starts a process outside the sandbox: it ends with loop and imports nothing from the workspace.

Everything in the workspace may be the model's. A Python started with the workspace as its working
directory (or with a script there) puts that directory first on `sys.path` and imports a planted
`bashlex.py` before its own; `-P` / PYTHONSAFEPATH=1 keeps it off. A child that outlives a
SIGKILLed loop runs on unattended; the parent-death signal ends it with loop.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping

PR_SET_PDEATHSIG = 1
_prctl: list = []  # libc's prctl, loaded before any fork: nothing may be imported in a forked child


def safe_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with PYTHONSAFEPATH=1, for every process loop starts outside the sandbox."""
    out = dict(os.environ if env is None else env)
    out["PYTHONSAFEPATH"] = "1"
    return out


def python_argv(*args: str) -> list[str]:
    """This interpreter with a safe path: `python -P ARGS`."""
    return [sys.executable, "-P", *args]


def die_with_loop() -> Callable[[], None] | None:
    """A `preexec_fn` that makes the child get SIGKILL when loop dies (Linux; None elsewhere).

    The signal follows the *thread* that forked the child, so start children from a thread that lives
    as long as they should (the main thread, or a run's long-lived worker). The child checks that
    loop is still its parent after arming the signal: loop may have died in between.
    """
    if not sys.platform.startswith("linux"):
        return None
    if not _prctl:
        try:
            import ctypes

            _prctl.append(ctypes.CDLL(None, use_errno=True).prctl)
        except (OSError, AttributeError):
            _prctl.append(None)
    prctl, parent = _prctl[0], os.getpid()
    if prctl is None:
        return None

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)

    return arm
