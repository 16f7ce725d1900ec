"""The processes a run starts (setup, agent, check), bounded in time and stoppable all at once.

Every child gets its own session so a timeout or a stop reaches its whole tree. The agent is asked
first (SIGTERM: it cancels its tools and ends its session file cleanly), then killed. Every child also
gets the parent-death signal, so a SIGKILLed eval leaves no agent running unattended: the signal
follows the thread that forked, and each run's thread waits for its children and kills their groups
before it returns, so it outlives them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import deque
from pathlib import Path

from loopagent.spawn import die_with_loop

KILL_AFTER = 5.0  # seconds a stopped child gets before SIGKILL
KEEP = 64 * 1024  # bytes of a setup's or check's output kept: its end (a check may print gigabytes of logs)


class Stopped(Exception):
    """The eval is stopping (SIGTERM): the run was cut short and must not be recorded."""


class Children:
    """The live children of this process; `stop` ends them and refuses new ones."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: dict[subprocess.Popen, bool] = {}  # process -> polite (SIGTERM itself first)
        self.stopping = threading.Event()

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], polite: bool, separate: bool):
        # the agent's JSON lines are read whole as text; a shell command's bytes go through a Tail
        return self.open(argv, polite, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE if separate else subprocess.STDOUT,
                         text=separate, errors="replace" if separate else None)

    def open(self, argv: list[str], polite: bool, **popen) -> subprocess.Popen:
        """Start `argv` in its own session with the parent-death signal, as one of the live children (a run's
        worker: eval/workers.py). Raises Stopped once the eval is stopping."""
        with self.lock:
            if self.stopping.is_set():
                raise Stopped("the eval is stopping")
            proc = subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_loop(), **popen)
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


class Tail:
    """The last `keep` bytes of a stream, read to its end on a thread, so output costs bounded memory."""

    def __init__(self, stream, keep: int = KEEP):
        self.keep, self.chunks, self.size, self.dropped = keep, deque(), 0, 0
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream) -> None:
        while chunk := stream.read1(65536):
            self.chunks.append(chunk)
            self.size += len(chunk)
            while self.size - len(self.chunks[0]) >= self.keep:
                old = self.chunks.popleft()
                self.size -= len(old)
                self.dropped += len(old)
        stream.close()

    def text(self, wait: float) -> str:
        """What was kept, once the stream ended (or `wait` seconds passed), marked when its start was cut."""
        self.thread.join(wait)
        data = b"".join(list(self.chunks))
        cut = self.dropped + max(0, len(data) - self.keep)
        text = data[-self.keep:].decode("utf-8", errors="replace")
        return f"[... {cut} bytes of output before this are not shown]\n{text}" if cut else text


def run_bounded(argv: list[str], cwd: Path, env: dict[str, str], timeout: float | None,
                polite: bool = False, separate: bool = False):
    """Run argv to its end or `timeout`. Shell commands: (exit code or None on timeout, output's tail). With
    `separate` (the agent): (exit code, stdout, stderr, killed by the bound)."""
    proc = CHILDREN.start(argv, cwd, env, polite, separate)
    tail = None if separate else Tail(proc.stdout)
    killed, out, err = False, "", ""
    try:
        try:
            out, err = _collect(proc, separate, timeout)
        except subprocess.TimeoutExpired:
            killed = True
            end(proc, polite)
            try:
                out, err = _collect(proc, separate, KILL_AFTER)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                out, err = _collect(proc, separate, None)
        finally:
            kill_group(proc)  # nothing of the run outlives it (a backgrounded server in a setup)
    finally:
        CHILDREN.forget(proc)
    if CHILDREN.stopping.is_set():
        raise Stopped("the eval is stopping")
    if separate:
        return proc.returncode, out or "", err or "", killed
    output = tail.text(KILL_AFTER)
    if killed:
        return None, output + f"\n[timed out after {timeout:g} s]"
    return proc.returncode, output


def _collect(proc: subprocess.Popen, separate: bool, timeout: float | None) -> tuple[str, str]:
    """Wait for the process; the agent's stdout and stderr whole (a shell command's output is its Tail's)."""
    if separate:
        return proc.communicate(timeout=timeout)
    proc.wait(timeout)
    return "", ""
