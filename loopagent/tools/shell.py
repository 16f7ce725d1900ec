"""The shell tool: one `bash -c` per call, in the workspace, killed whole on timeout or cancel.

The command runs in its own session with stdin at /dev/null. When it ends, times out or is
cancelled, every process of that session (and any descendant that left it) is killed, so no
background job outlives the call and no orphan holding the output pipe can hang the read.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping

from pydantic import BaseModel, Field

from loopagent.messages import ToolResult
from loopagent.tools.base import Tool, ToolContext, ToolError

HEAD_BYTES = 8_000  # output kept from the start ...
TAIL_BYTES = 24_000  # ... and from the end, where tracebacks and test summaries are
POLL_SECONDS = 0.05  # how often a running command checks for cancel and timeout


class ShellParams(BaseModel):
    command: str = Field(min_length=1, description="bash command line, run in the workspace root")
    timeout: float | None = Field(None, gt=0, le=3600, description="seconds before the command is killed")


class Shell(Tool):
    name = "shell"
    description = (
        "Run a bash command in the workspace root: a fresh shell each call, stdin is empty, background "
        "jobs do not outlive the call. Returns the exit code, then stdout and stderr interleaved (long "
        "output keeps its start and end). A non-zero exit is reported as an error. Use it for tests, "
        "builds and git."
    )
    params = ShellParams

    def run(self, args: ShellParams, ctx: ToolContext) -> ToolResult:
        if ctx.cancel.is_set():
            raise ToolError("cancelled by the user before the command started")
        timeout = args.timeout or ctx.shell_timeout
        try:
            proc = subprocess.Popen(
                ["bash", "-c", args.command], cwd=ctx.workspace.root, env=dict(ctx.env),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"cannot start bash: {exc.strerror}") from None
        output = Output()
        reader = threading.Thread(target=output.read_from, args=(proc.stdout,), daemon=True)
        reader.start()
        started = time.monotonic()
        outcome = wait(proc, ctx.cancel, started + timeout)
        kill_tree(proc.pid)
        proc.wait()
        output.stop.set()
        reader.join()
        proc.stdout.close()
        text = output.text()
        if outcome == "timeout":
            return ToolResult.error(f"timed out after {timeout:g} s; the command and its processes "
                                    f"were killed\n{text}")
        if outcome == "cancelled":
            return ToolResult.error(f"cancelled by the user after {time.monotonic() - started:.1f} s; "
                                    f"the command and its processes were killed\n{text}")
        body = f"exit code {proc.returncode}\n{text}"
        return ToolResult.error(body) if proc.returncode else ToolResult.ok(body)


def wait(proc: subprocess.Popen, cancel: threading.Event, deadline: float) -> str:
    """'exited', 'timeout' or 'cancelled', whichever happens first.

    The exited shell is left unreaped (WNOWAIT) so its pid, which is also the session id,
    cannot be reused by an unrelated process before kill_tree has swept the session.
    """
    delay = 0.001
    while True:
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return "exited"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        if cancel.wait(min(delay, left)):
            return "cancelled"
        delay = min(delay * 2, POLL_SECONDS)


def kill_tree(sid: int) -> None:
    """SIGKILL every process in session `sid` and every descendant of its leader, then wait until they are gone."""
    doomed = session_members(sid)
    try:
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    # Death after SIGKILL is quick but asynchronous; wait (bounded) so "killed" means gone.
    deadline = time.monotonic() + 2.0
    while doomed and time.monotonic() < deadline:
        doomed = [pid for pid in doomed if alive(pid)]
        if doomed:
            time.sleep(0.01)


def session_members(sid: int) -> list[int]:
    """Live processes in session `sid` or descended from its leader (Linux /proc; [] elsewhere)."""
    parents: dict[int, int] = {}
    members = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        fields = proc_stat(int(name))
        if fields is None or fields[0] == "Z":
            continue
        state, ppid, _pgrp, session = fields
        parents[int(name)] = ppid
        if session == sid:
            members.add(int(name))
    for pid in parents:
        ancestor = parents.get(pid)
        seen = 0
        while ancestor and seen < 64:
            if ancestor == sid:
                members.add(pid)
                break
            ancestor, seen = parents.get(ancestor), seen + 1
    members.discard(os.getpid())
    return sorted(members)


def proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgrp, session) from /proc/<pid>/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    rest = raw[raw.rfind(")") + 2 :].split()
    return rest[0], int(rest[1]), int(rest[2]), int(rest[3])


def alive(pid: int) -> bool:
    fields = proc_stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


class Output:
    """Keeps the head and the tail of a stream of any size, and counts what was between them."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0
        self.stop = threading.Event()

    def read_from(self, pipe) -> None:
        """Read until EOF, or until `stop` is set and nothing more is waiting in the pipe."""
        fd = pipe.fileno()
        while True:
            ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
            if not ready:
                if self.stop.is_set():
                    return  # an escaped process may hold the pipe open; stop waiting for it
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            self.add(chunk)

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]

    def text(self) -> str:
        """The output decoded with replacement; when too long, head + marker + tail at line boundaries."""
        if self.total <= HEAD_BYTES + TAIL_BYTES:
            data = bytes(self.head + self.tail)
            return data.decode("utf-8", errors="replace") if data else "(no output)"
        head = bytes(self.head)
        tail = bytes(self.tail[-TAIL_BYTES:])
        # Cut at line boundaries when there are any, so no half lines surround the marker.
        if not head.endswith(b"\n") and b"\n" in head:
            head = head[: head.rindex(b"\n") + 1]
        if b"\n" in tail[:-1]:
            tail = tail[tail.index(b"\n") + 1 :]
        dropped = self.total - len(head) - len(tail)
        lines = self.newlines - head.count(b"\n") - tail.count(b"\n")
        marker = f"[... {lines} lines ({dropped} bytes) of output dropped here ...]\n"
        if not head.endswith(b"\n"):
            marker = "\n" + marker
        return (head.decode("utf-8", errors="replace") + marker + tail.decode("utf-8", errors="replace"))


SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")


def scrubbed_env(environ: Mapping[str, str], allow: list[str] | tuple[str, ...] = (),
                 secrets: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a shell command sees: no secret-looking names (unless allowed), no known secret values."""
    kept = {}
    for name, value in environ.items():
        if any(s and s in value for s in secrets):
            continue  # the API key itself never reaches a command, allowlisted or not
        if name not in allow and any(m in name.upper() for m in SECRET_MARKERS):
            continue
        kept[name] = value
    return kept
