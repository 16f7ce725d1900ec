"""Asking a person at the terminal whether a call may run."""

from __future__ import annotations

import select
import sys
from collections.abc import Callable
from typing import IO, Literal

from loopagent.cancel import Cancel
from loopagent.messages import ToolCall
from loopagent.policy import Decision
from loopagent.render.safe import printable

Answer = Literal["yes", "no", "always"]
QUESTION = "      allow? [y/N/a] "


def parse_answer(line: str) -> Answer:
    """`y`/`yes` runs the call once, `a`/`always` for the rest of the session; anything else is no."""
    word = line.strip().lower()
    if word in ("a", "always"):
        return "always"
    return "yes" if word in ("y", "yes") else "no"


class PromptApprover:
    """Shows the command or the diff and reads `allow? [y/N/a]`; Enter, EOF or anything else means no.

    `a` allows this exact call (the same tool with the same command or diff) for the rest of
    the session: a different command still asks. Drawing is delegated to `show` (the terminal
    renderer); without it a plain text fallback is written to `out`. `sandbox` is the line shown
    under a shell command saying where it will run ("sandbox: workspace writable, no network",
    "not sandboxed"); empty shows none.
    """

    def __init__(self, read: IO[str] | None = None, out: IO[str] | None = None,
                 show: Callable[[ToolCall, str, str, str, str], None] | None = None, sandbox: str = ""):
        self.read = read or sys.stdin
        self.out = out or terminal()
        # The terminal renderer draws the command or diff: (call, subject, preview, reason, sandbox).
        self.show = show
        self.sandbox = sandbox
        self.always: set[tuple[str, str]] = set()

    def approve(self, call: ToolCall, subject: str, preview: str, decision: Decision, cancel: Cancel) -> bool:
        """Ask once; True runs the call. A set `cancel` (Ctrl+C at the question) answers False at once."""
        key = (call.name, preview or subject)
        if key in self.always:
            return True
        sandbox = self.sandbox if call.name == "shell" else ""
        if self.show is not None:
            self.show(call, subject, preview, decision.reason, sandbox)
        else:
            self.out.write(plain_question(call, subject, preview, decision.reason, sandbox))
        self.out.write(QUESTION)
        self.out.flush()
        line = self.answer(cancel)
        if line is None:
            self.out.write("\n")
            self.out.flush()
            return False
        answer = parse_answer(line)
        if answer == "always":
            self.always.add(key)
        return answer != "no"

    def answer(self, cancel: Cancel) -> str | None:
        """The line typed, or None when the turn was cancelled first."""
        try:
            fd = self.read.fileno()
        except (AttributeError, OSError, ValueError):  # a StringIO in tests: nothing to wait for
            fd = -1
        if fd >= 0:
            # The terminal and the token together: Ctrl+C sets the token from another thread, and
            # a blocked readline would not notice it.
            ready, _, _ = select.select([fd, cancel.fileno()], [], [])
            if fd not in ready:
                return None
        return None if cancel.is_set() else self.read.readline()


def terminal() -> IO[str]:
    """Where a question is asked: stderr when it is a terminal, else the controlling terminal (stdin
    is one, or no approver would exist), so that a redirected stream never swallows the question."""
    if _is_tty(sys.stderr):
        return sys.stderr
    try:
        return open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115 - kept for the whole run
    except OSError:
        return sys.stderr


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def plain_question(call: ToolCall, subject: str, preview: str, reason: str, sandbox: str = "") -> str:
    """The text shown before the question when no renderer draws it; every untrusted part escaped."""
    shell = call.name == "shell"
    command = preview or subject
    lines = [f"      $ {command.rstrip()}".replace("\n", "\n        ") if shell else f"      {call.name} {subject}"]
    if shell and sandbox:
        lines.append(f"      {sandbox}")
    if preview and preview != subject and not shell:
        lines.append(preview.rstrip("\n"))
    if reason:
        lines.append(f"      needs approval: {reason}")
    return printable("\n".join(lines)) + "\n"
