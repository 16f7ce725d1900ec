"""How loop starts a process outside the sandbox: it ends with loop and imports nothing from the workspace.

Everything in the workspace may be the model's. A Python started with the workspace as its working
directory (or with a script there) puts that directory first on `sys.path` and imports a planted
`bashlex.py` before its own; `-P` / PYTHONSAFEPATH=1 keeps it off. A PATH entry that is empty or
relative names the working directory: a planted `./git` would run. A child that outlives a
SIGKILLed loop runs on unattended; the parent-death signal ends it with loop, and `guard` ends its
whole process group (a hook's `sleep 300 &`, the node an `npx` server starts), which the signal
alone would not: it is not inherited across fork.
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
    if "PATH" in out:
        out["PATH"] = absolute_path(out["PATH"])
    return out


def absolute_path(path: str) -> str:
    """PATH without its empty and relative entries: they name the working directory, the workspace."""
    return os.pathsep.join(p for p in path.split(os.pathsep) if os.path.isabs(p))


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


def guard(argv: list[str]) -> list[str]:
    """`argv` run under a guard that ends its whole process group when loop dies (Linux; else `argv`).

    For a child started in a new session (`start_new_session=True`, as hooks and the MCP SDK do): the
    guard is its group's leader and `argv` its child; when loop dies the parent-death signal reaches
    the guard, which kills the group. It passes on `argv`'s exit status (a signal as the same signal),
    keeps none of the child's pipes open, and costs one small interpreter start (guard.py: no site, no
    imports beyond ctypes; about 15 ms of CPU). The parent-death signal follows the thread that forked
    the guard: start it from a thread that outlives it.
    """
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.py"),
            str(os.getpid()), *argv]
