"""Asking a person at the terminal whether a call may run."""

from __future__ import annotations

import sys
from typing import IO

from loopagent.messages import ToolCall
from loopagent.policy import Decision


class PromptApprover:
    """Shows the command or the diff and reads `allow? [y/N/a]`; Enter means no.

    `a` allows this exact call (same tool, same arguments) for the rest of the session.
    """

    def __init__(self, read: IO[str] | None = None, out: IO[str] | None = None):
        self.read = read or sys.stdin
        self.out = out or sys.stderr
        self.always: set[tuple[str, str]] = set()

    def approve(self, call: ToolCall, subject: str, preview: str, decision: Decision) -> bool:
        key = (call.name, preview or subject)
        if key in self.always:
            return True
        if preview and preview != subject:
            self.out.write(preview.rstrip("\n") + "\n")
        self.out.write("      allow? [y/N/a] ")
        self.out.flush()
        answer = self.read.readline().strip().lower()
        if answer in ("a", "always"):
            self.always.add(key)
            return True
        return answer in ("y", "yes")
