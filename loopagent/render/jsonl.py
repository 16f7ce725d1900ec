"""Headless output: one JSON object per line on stdout, `result` always last.

json.dumps escapes C0 controls; DEL, C1 controls and bidi characters, which it leaves raw with
ensure_ascii=False, are written as `\\uXXXX` too, so a terminal showing the stream stays ours.
They only ever occur inside strings, where the escape means the same character.
"""

from __future__ import annotations

import json
import sys
from typing import IO

from loopagent.events import (
    AssistantDone,
    CheckRan,
    Compacted,
    ContextEdit,
    Event,
    HookRan,
    MessageAdded,
    Notice,
    RunEnd,
    SessionStarted,
    ToolCalled,
    ToolFinished,
)
from loopagent.messages import UserMessage
from loopagent.render.safe import UNSAFE


def _arguments(raw: str) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class JsonPrinter:
    """Listener: every event a script needs, one line each. With the `user` lines, the `assistant` and
    `tool_result` lines are the conversation as the session file stores it; `context_edit` and
    `compacted` lines say how the next request differs from it."""

    def __init__(self, out: IO[str] | None = None):
        self.out = out or sys.stdout

    def write(self, obj: dict) -> None:
        line = UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(obj, ensure_ascii=False))
        self.out.write(line + "\n")
        self.out.flush()

    def __call__(self, event: Event) -> None:
        if isinstance(event, SessionStarted):
            self.write({"type": "session", "id": event.id, "path": event.path, "ctx_size": event.ctx_size,
                        "ctx_source": event.ctx_source})
        elif isinstance(event, MessageAdded) and isinstance(event.message, UserMessage):
            self.write({"type": "user", "index": event.index, "content": event.message.content})
        elif isinstance(event, ContextEdit):
            self.write({"type": "context_edit", "index": event.index, "kind": event.kind, "content": event.content})
        elif isinstance(event, AssistantDone):
            msg = event.message
            self.write({
                "type": "assistant", "text": msg.text,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in msg.tool_calls],
            })
        elif isinstance(event, ToolCalled):
            c = event.call
            self.write({"type": "tool_call", "id": c.id, "name": c.name, "arguments": _arguments(c.arguments)})
        elif isinstance(event, ToolFinished):
            r = event.result
            found = r.details.diagnostics if r.details else ""  # the language server's block (loopagent/lsp/)
            self.write({"type": "tool_result", "id": r.call_id, "name": r.name, "is_error": r.is_error,
                        "content": r.content, **({"diagnostics": found} if found else {})})
            if r.details is not None and r.details.todos is not None:  # todo_write: the checklist as it stands
                self.write({"type": "todo", "todos": [{"content": c, "status": s} for c, s in r.details.todos]})
        elif isinstance(event, Notice):
            self.write({"type": "notice", "kind": event.kind, "text": event.text})
        elif isinstance(event, HookRan):
            self.write({"type": "hook", "event": event.kind, "command": event.command, "tool": event.tool,
                        "verdict": event.verdict, "reason": event.reason, "seconds": round(event.seconds, 3)})
        elif isinstance(event, CheckRan):
            self.write({"type": "check", "command": event.command, "passed": event.passed,
                        "exit_code": event.exit_code, "attempt": event.attempt, "output": event.output,
                        "timed_out": event.timed_out, "seconds": round(event.seconds, 3)})
        elif isinstance(event, Compacted):
            self.write({"type": "compacted", "summary": event.summary, "upto": event.upto,
                        "tokens_before": event.tokens_before, "tokens_after": event.tokens_after,
                        "focus": event.focus})
        elif isinstance(event, RunEnd):
            line = {"type": "result", "status": event.status, "steps": event.steps,
                    "usage": {"prompt_tokens": event.usage.prompt_tokens,
                              "completion_tokens": event.usage.completion_tokens}}
            if event.message:
                line["message"] = event.message
            if event.cost is not None:
                line["cost_usd"] = round(event.cost, 6)
            if event.output is not None:  # --output-schema: the answer's JSON value, valid against it
                line["output"] = event.output.value
            if event.check is not None:
                line["check"] = {"command": event.check.command, "passed": event.check.passed,
                                 "attempts": event.check.attempt}
            self.write(line)
