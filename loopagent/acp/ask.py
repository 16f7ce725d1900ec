"""Asking the person through the editor: loop's policy has decided `ask`; the client shows the exact command
or the diff with four options. "Always" means what it means at the REPL's prompt: this exact call (the same
tool with the same command or diff) is answered so for the rest of the session.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp import schema

from loopagent.acp.bridge import Bridge, Cancelled, message_of
from loopagent.acp.feed import absolute, arguments, started, text_content
from loopagent.cancel import Cancel
from loopagent.messages import ToolCall
from loopagent.policy import Decision

log = logging.getLogger("loop.acp")

OPTIONS = [
    schema.PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    schema.PermissionOption(option_id="allow_always", name="Always allow this call", kind="allow_always"),
    schema.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    schema.PermissionOption(option_id="reject_always", name="Always reject this call", kind="reject_always"),
]


class ClientApprover:
    """The run's approver (loop.py `Approver`) for one ACP session. `ask` sends session/request_permission
    (after the updates before it); `ids` gives a call its ACP id (the one its `tool_call` update carries, or a
    new one for a call the editor was not shown, which `settled` then closes);
    `files` reads a file's current text (the editor's buffer if offered)."""

    def __init__(self, bridge: Bridge, ask: Callable[[schema.ToolCallUpdate], Awaitable[Any]], root: str,
                 ids: Callable[[ToolCall], str], files: Callable[[str], str | None],
                 sandbox: Callable[[], str] = lambda: "", settled: Callable[[str, bool], None] = lambda i, a: None):
        self.bridge, self.ask, self.root, self.settled = bridge, ask, root, settled  # settled(ACP id, allowed)
        self.ids, self.files, self.sandbox = ids, files, sandbox  # sandbox: where a command asked about runs
        self.always: set[tuple[str, str]] = set()
        self.never: set[tuple[str, str]] = set()

    def approve(self, call: ToolCall, subject: str, preview: str, decision: Decision, cancel: Cancel) -> bool:
        key = (call.name, preview or subject)
        if key in self.always:
            return True
        if key in self.never:
            return False
        request = self.request(call, subject, preview, decision)
        chosen = self.chosen(request, cancel)
        if chosen == "allow_always":
            self.always.add(key)
        elif chosen == "reject_always":
            self.never.add(key)
        allowed = chosen in ("allow_once", "allow_always")
        self.settled(request.tool_call_id, allowed)
        return allowed

    def chosen(self, request: schema.ToolCallUpdate, cancel: Cancel) -> str | None:
        """The option the person chose; None for a cancelled turn or a client that cannot ask (nothing runs
        unasked)."""
        try:
            answer = self.bridge.call(lambda: self.ask(request), cancel)
        except Cancelled:
            return None
        except Exception as exc:
            log.warning("session/request_permission failed: %s", message_of(exc))
            return None
        outcome = answer.outcome
        return getattr(outcome, "option_id", None) if getattr(outcome, "outcome", "") == "selected" else None

    def request(self, call: ToolCall, subject: str, preview: str, decision: Decision) -> schema.ToolCallUpdate:
        """The call as the question shows it: the exact command (and where it runs) or the file's diff."""
        content: list = []
        if call.name == "shell":
            lines = [preview or subject]
            if where := self.sandbox():
                lines.append(where)
            content.append(text_content("\n".join(lines)))
        elif diff := self.diff(call):
            content.append(diff)
        if preview and call.name != "shell":
            content.append(text_content(preview))
        if decision.reason:
            content.append(text_content(f"needs approval: {decision.reason}"))
        start = started(call, subject, self.root, self.ids(call))
        return schema.ToolCallUpdate(tool_call_id=start.tool_call_id, title=start.title, kind=start.kind,
                                     status="pending", raw_input=start.raw_input, locations=start.locations,
                                     content=content or None)

    def diff(self, call: ToolCall) -> schema.FileEditToolCallContent | None:
        """The whole file before and after a write or a one-place edit; None when it cannot be told simply
        (the unified diff the policy's preview holds is shown as text beside it anyway)."""
        args = arguments(call)
        if call.name not in ("write_file", "edit_file") or not isinstance(args, dict) \
                or not isinstance(args.get("path"), str):
            return None
        path = absolute(self.root, args["path"])
        try:
            old = self.files(path)
        except Exception:
            return None
        if call.name == "write_file" and isinstance(args.get("content"), str):
            new = args["content"]
        else:
            old_string, new_string = args.get("old_string"), args.get("new_string")
            if old is None or not isinstance(old_string, str) or not isinstance(new_string, str) \
                    or not old_string or old_string not in old:
                return None
            new = old.replace(old_string, new_string, -1 if args.get("replace_all") else 1)
        return schema.FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)
