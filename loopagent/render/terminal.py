"""Plain, readable terminal output: a line per tool call, a result summary, the answer, a closing line."""

from __future__ import annotations

import re
import sys
from typing import IO

from loopagent.events import AssistantDone, Event, Notice, RunEnd, TextDelta, ToolCalled, ToolFinished

VERDICT = re.compile(r"\b\d+ (passed|failed)\b")


def summary(content: str, is_error: bool) -> str:
    """The line a person needs from a result: a test verdict, else the first (or, for errors, last) line."""
    lines = [ln.strip() for ln in content.splitlines() if ln.strip()]
    if not lines:
        return "(no output)"
    for ln in reversed(lines):
        if VERDICT.search(ln):
            return ln.strip("= ")
    return lines[-1] if is_error else lines[0]


class PlainRenderer:
    def __init__(self, out: IO[str] | None = None):
        self.out = out or sys.stdout
        self.calls = 0
        self.streaming = False

    def line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self.streaming = True
        elif isinstance(event, AssistantDone):
            if self.streaming:
                self.out.write("\n")
                self.streaming = False
        elif isinstance(event, ToolCalled):
            self.calls += 1
            subject = event.subject or event.call.arguments[:80]
            self.line(f"[{self.calls}] {event.call.name} {subject}")
        elif isinstance(event, ToolFinished):
            r = event.result
            self.line(f"    {'error' if r.is_error else 'ok'}: {summary(r.content, r.is_error)[:160]}")
        elif isinstance(event, Notice):
            self.line(f"{event.kind}: {event.text}")
        elif isinstance(event, RunEnd):
            u = event.usage
            tail = f" ({event.message})" if event.message else ""
            self.line(f"done: {event.status}, {event.steps} steps, "
                      f"{u.prompt_tokens}+{u.completion_tokens} tokens{tail}")
