"""The shell tool: one `bash -c` per call, in the workspace, killed whole on timeout or cancel.

The tool context's executor starts the command (inside the sandbox, or plainly with
`--sandbox off`) in its own session with stdin at /dev/null. When it ends, times out or is
cancelled, every process it started is killed (loopagent/sandbox/containment.py), so no
background job outlives the call and no orphan holding the output pipe can hang the read.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from loopagent.cancel import Cancel
from loopagent.clip import Gap, clip
from loopagent.details import Details
from loopagent.errors import ToolError
from loopagent.messages import ToolResult
from loopagent.sandbox.containment import alive, children, kill_call
from loopagent.tools.base import Tool, ToolContext
from loopagent.tools.spec import Resource

__all__ = ["Shell", "ShellParams", "alive"]

HEAD_BYTES = 8_000  # output kept from the start ...
TAIL_BYTES = 24_000  # ... and from the end, where tracebacks and test summaries are
POLL_SECONDS = 0.05  # how often a running command checks for cancel and timeout
UTF8_CONTINUATION = bytes(range(0x80, 0xC0))


def execute(command: str, ctx: ToolContext, timeout: float, output: Output) -> tuple[str, int, str]:
    """Run `command` with bash in the workspace through the run's executor, its output into `output`, until
    it exits, `timeout` passes or the token is set; every process it started is killed after it.
    Returns the outcome ("exit", "timeout" or "cancelled"), the exit status and the tripwire's line
    ("" unless git metadata was put back; the user was warned of it); OSError if bash cannot start.

    The tripwire (sandbox/tripwire.py) runs in every sandbox mode: with `--sandbox off` the command could
    do anything anyway, but what it leaves in the workspace would still run from the user's own git."""
    from loopagent.sandbox import tripwire

    root = str(ctx.workspace.root)
    git_before = tripwire.snapshot(root)
    before = children()  # orphans of this call are loop's new children (see containment.py)
    try:
        started = ctx.executor.spawn(["bash", "-c", command], root, ctx.env)
    except OSError:
        tripped(git_before, ctx)  # bwrap may have started and made its mount points before failing
        raise
    proc = started.proc
    reader = threading.Thread(target=output.read_from, args=(proc.stdout,), daemon=True)
    reader.start()
    outcome = wait(proc, ctx.cancel, time.monotonic() + timeout)
    kill_call(proc.pid, before)
    proc.wait()
    started.close()
    output.stop.set()
    reader.join()
    proc.stdout.close()
    blocked = [ctx.redact(line) for line in started.blocked()]  # the hosts the proxy refused this call
    for line in blocked:
        ctx.warn(line)
    return outcome, proc.returncode, "\n".join(filter(None, [tripped(git_before, ctx), *blocked]))


def tripped(before: Any, ctx: ToolContext) -> str:
    """Put back the git metadata the command must not change (after every process of it is gone);
    the line for the call's result, also given to the user as a warning."""
    from loopagent.sandbox import tripwire

    try:
        line = ctx.redact(tripwire.note(tripwire.put_back(before)))
    except Exception as exc:  # a bug here must not lose the command's output; the user still hears of it
        line = f"tripwire: could not compare git metadata after the command ({type(exc).__name__}: {exc})"
    if line:
        ctx.warn(line)
    return line


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
    effect = "exec"

    def run(self, args: ShellParams, ctx: ToolContext) -> ToolResult:
        if ctx.cancel.is_set():
            raise ToolError("cancelled by the user before the command started")
        timeout = args.timeout or ctx.shell_timeout
        output = Output()
        begun = time.monotonic()
        try:
            outcome, returncode, line = execute(args.command, ctx, timeout, output)
        except OSError as exc:
            raise ToolError(f"cannot start bash: {exc.strerror}") from None
        text = output.text()
        if line:  # the model reads what was put back, so it does not count on it
            text += ("" if text.endswith("\n") else "\n") + line + "\n"
        if outcome == "timeout":
            return ToolResult.error(f"timed out after {timeout:g} s; the command and its processes "
                                    f"were killed\n{text}", Details("timeout", lines=output.lines()))
        if outcome == "cancelled":
            return ToolResult.error(f"{ctx.cancel.said()} after {time.monotonic() - begun:.1f} s; "
                                    f"the command and its processes were killed\n{text}",
                                    Details("cancelled", lines=output.lines()))
        body = f"exit code {returncode}\n{text}"
        details = Details("error" if returncode else "ok", exit_code=returncode, lines=output.lines(),
                          clipped=output.clipped)
        if not returncode:
            return ToolResult.ok(body, details=details)
        note = ctx.executor.note(text, returncode, args.command)
        if note:
            body += ("" if body.endswith("\n") else "\n") + note + "\n"
        return ToolResult.error(body, details)

    def resource(self, args: Mapping[str, Any]) -> Resource:
        return Resource("run", args["command"])


def wait(proc: subprocess.Popen, cancel: Cancel, deadline: float) -> str:
    """'exited', 'timeout' or 'cancelled', whichever happens first.

    The exited shell is left unreaped (WNOWAIT) so its pid, which is also the session id,
    cannot be reused by an unrelated process before kill_call has swept the session.
    """
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        delay = 0.001
        while True:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return "exited"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if pidfd is not None:
                # The pidfd turns readable the moment the command exits, the token's descriptor the
                # moment the turn is cancelled: no polling delay on either.
                select.select([pidfd, cancel.fileno()], [], [], min(POLL_SECONDS, left))
                if cancel.is_set():
                    return "cancelled"
            elif cancel.wait(min(delay, left)):
                return "cancelled"
            delay = min(delay * 2, POLL_SECONDS)
    finally:
        if pidfd is not None:
            os.close(pidfd)


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

    @property
    def clipped(self) -> bool:
        return self.total > HEAD_BYTES + TAIL_BYTES

    def lines(self) -> int:
        """Lines of output, a last one without a newline included."""
        last = self.tail[-1:] or self.head[-1:]
        return self.newlines + (1 if last and last != b"\n" else 0)

    def text(self) -> str:
        """The output decoded with replacement; when too long, head + marker + tail (clip.py's marker)."""
        if not self.clipped:
            data = bytes(self.head + self.tail)
            return data.decode("utf-8", errors="replace") if data else "(no output)"
        head = whole_chars(bytes(self.head))
        tail = bytes(self.tail[-TAIL_BYTES:])
        tail = tail[len(tail[:3]) - len(tail[:3].lstrip(UTF8_CONTINUATION)):]  # no half character at its start
        # What lies between the kept bytes was never kept: the clip counts it from the totals.
        gap = Gap(self.newlines - head.count(b"\n") - tail.count(b"\n"), self.total - len(head) - len(tail))
        first, last = head.decode("utf-8", errors="replace"), tail.decode("utf-8", errors="replace")
        return clip(first + last, len(first), len(last), gap=gap)


def whole_chars(data: bytes) -> bytes:
    """`data` without a UTF-8 sequence cut off at its end (the cut bytes join the clipped part)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # a lead byte: complete when the sequence it starts fits
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data
