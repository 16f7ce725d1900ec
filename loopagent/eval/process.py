"""The processes a run starts (setup, agent, check), bounded in time and stoppable all at once.

Every child gets its own session so a timeout or a stop reaches its whole tree. The agent is asked
first (SIGTERM: it cancels its tools and ends its session file cleanly), then killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

KILL_AFTER = 5.0  # seconds a stopped child gets before SIGKILL


class Stopped(Exception):
    """The eval is stopping (SIGTERM): the run was cut short and must not be recorded."""


class Children:
    """The live children of this process; `stop` ends them and refuses new ones."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: dict[subprocess.Popen, bool] = {}  # process -> polite (SIGTERM itself first)
        self.stopping = threading.Event()

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], polite: bool, separate: bool):
        with self.lock:
            if self.stopping.is_set():
                raise Stopped("the eval is stopping")
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE if separate else subprocess.STDOUT,
                                    text=True, errors="replace", start_new_session=True)
            self.live[proc] = polite
            return proc

    def forget(self, proc: subprocess.Popen) -> None:
        with self.lock:
            self.live.pop(proc, None)

    def stop(self) -> None:
        """End every live child (safe from a signal handler's thread); later starts raise Stopped."""
        self.stopping.set()
        with self.lock:
            procs = list(self.live.items())
        for proc, polite in procs:
            end(proc, polite)


CHILDREN = Children()


def end(proc: subprocess.Popen, polite: bool) -> None:
    """SIGTERM the agent itself (it cleans up) or the whole group of a shell command."""
    try:
        if polite:
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_bounded(argv: list[str], cwd: Path, env: dict[str, str], timeout: float | None,
                polite: bool = False, separate: bool = False):
    """Run argv to its end or `timeout`. Shell commands: (exit code or None on timeout, output). With
    `separate` (the agent): (exit code, stdout, stderr, killed by the bound)."""
    proc = CHILDREN.start(argv, cwd, env, polite, separate)
    killed = False
    try:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
            end(proc, polite)
            try:
                out, err = proc.communicate(timeout=KILL_AFTER)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                out, err = proc.communicate()
        finally:
            kill_group(proc)  # nothing of the run outlives it (a backgrounded server in a setup)
    finally:
        CHILDREN.forget(proc)
    if CHILDREN.stopping.is_set():
        raise Stopped("the eval is stopping")
    if separate:
        return proc.returncode, out or "", err or "", killed
    output = out or ""
    if killed:
        return None, output + f"\n[timed out after {timeout:g} s]"
    return proc.returncode, output
