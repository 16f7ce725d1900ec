"""The run's events as ACP session updates, and a saved session replayed as the same updates.

What an editor shows of a call: its kind, a title that is the exact command or path, absolute
`locations`, the raw arguments; then its status and result, with a `diff` block for a file it changed.
A call refused (by a rule, the person or a hook) or cancelled still appears, and ends `failed` with the
reason as its content (DESIGN.md "Agent Client Protocol").
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from acp import schema

from loopagent.events import Notice, TextDelta, ThinkingDelta, ToolCalled, ToolFinished, ToolStarted
from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage

KINDS = {"read_file": "read", "list_files": "search", "grep": "search", "write_file": "edit", "edit_file": "edit",
         "shell": "execute", "task": "think", "load_skill": "think", "todo_write": "think"}  # DESIGN: task, skills think
VERBS = {"read_file": "Read", "list_files": "List", "grep": "Search", "write_file": "Write", "edit_file": "Edit",
         "task": "Task", "load_skill": "Load skill", "todo_write": "Update the todo list"}
MODE_NOTE = "[plan mode is o"  # compose/notes.py: the note of a switch into or out of plan mode opens ...
SKILL_BLOCK = '\n\n<skill name="'  # skills/book.py: a skill `$NAME` loaded follows the person's message so
PATH_ARGS = {"read_file": "path", "write_file": "path", "edit_file": "path", "list_files": "path", "grep": "path"}
EDITS = ("write_file", "edit_file")


def arguments(call: ToolCall) -> Any:
    """The call's arguments as the model sent them: a JSON object, else the raw string."""
    try:
        return json.loads(call.arguments or "{}")
    except ValueError:
        return call.arguments


def title(call: ToolCall, args: Any, subject: str = "") -> str:
    """The exact command of a shell call, the path of a file call, the name and subject otherwise."""
    if not isinstance(args, dict):
        return call.name
    if call.name == "shell" and isinstance(args.get("command"), str):
        return args["command"]
    verb = VERBS.get(call.name, call.name)
    if not subject and call.name == "task":  # a replayed call: the subject the tool gives it (tools/task.py)
        subject = f"{args.get('agent') or 'explore'}: {args.get('description') or ''}"
    what = subject or str(args.get("path") or args.get("pattern") or args.get("name") or "")
    return f"{verb} {what}".strip()


def locations(call: ToolCall, args: Any, root: str) -> list[schema.ToolCallLocation] | None:
    """Absolute paths the call is about (the model's path joined to the workspace, not resolved)."""
    key = PATH_ARGS.get(call.name)
    if not key or not isinstance(args, dict) or not isinstance(args.get(key), str):
        return [schema.ToolCallLocation(path=root)] if call.name in ("list_files", "grep") else None
    return [schema.ToolCallLocation(path=absolute(root, args[key]))]


def absolute(root: str, path: str) -> str:
    return os.path.normpath(os.path.join(root, path))


def text_content(text: str) -> schema.ContentToolCallContent:
    return schema.ContentToolCallContent(type="content", content=schema.TextContentBlock(type="text", text=text))


def started(call: ToolCall, subject: str, root: str, call_id: str, status: str = "pending",
            content: list | None = None) -> schema.ToolCallStart:
    args = arguments(call)
    return schema.ToolCallStart(
        session_update="tool_call", tool_call_id=call_id, title=title(call, args, subject),
        kind=KINDS.get(call.name, "other"), status=status, raw_input=args, locations=locations(call, args, root),
        content=content)


def result_content(call: ToolCall, result: ToolResult, root: str,
                   change: tuple[str | None, str] | None) -> list:
    """The result's text, and for a file the call changed, a diff block of the whole file."""
    content: list = [text_content(result.content)]
    args = arguments(call)
    if change is not None and not result.is_error and isinstance(args, dict) and isinstance(args.get("path"), str):
        old, new = change
        content.append(schema.FileEditToolCallContent(type="diff", path=absolute(root, args["path"]),
                                                      old_text=old, new_text=new))
    return content


def plan_of(result: ToolResult) -> schema.AgentPlanUpdate | None:
    """The todo list a result carries (todo_write's `todos` detail: (content, status) pairs) as a `plan`."""
    todos = getattr(result.details, "todos", None)
    if result.is_error or todos is None:
        return None
    return schema.AgentPlanUpdate(session_update="plan", entries=[
        schema.PlanEntry(content=content, priority="medium", status=status) for content, status in todos])


class Feed:
    """Listener: the run's events as updates posted to `post`; `files(path)` reads a file's text for the
    diff blocks (None: no such file); `writes` are the editor's own (before, after) by path."""

    def __init__(self, post: Callable[[Any], None], root: str, files: Callable[[str], str | None],
                 writes: Callable[[], dict[str, tuple[str | None, str]]] = dict):
        import threading

        self.post, self.root, self.files, self.writes = post, root, files, writes
        self.ids: dict[str, str] = {}  # the model's call id -> the ACP id (unique in the session)
        self.used: set[str] = set()
        self.lock = threading.Lock()  # parallel calls (read-only children) take ids at once
        self.before: dict[str, str | None] = {}  # ACP id -> the file's text before an edit ran
        self.running: dict[str, ToolCall] = {}  # ACP id -> a call shown and not finished yet
        self.unshown: set[str] = set()  # ACP ids of calls only a question showed (a task child's)

    def id_of(self, call: ToolCall, new: bool = False) -> str:
        if new or call.id not in self.ids:
            self.ids[call.id] = self.fresh(call)
        return self.ids[call.id]

    def fresh(self, call: ToolCall) -> str:
        with self.lock:
            acp_id, n = call.id or "call", 1
            while acp_id in self.used:
                n += 1
                acp_id = f"{call.id}#{n}"
            self.used.add(acp_id)
            return acp_id

    def asked_id(self, call: ToolCall) -> str:
        """The ACP id of a call a question is about: the shown call's, or for a call the editor has not seen (a
        task child's, whose model may reuse the parent's ids) a new one, which `settled` closes."""
        known = self.ids.get(call.id)
        if known is not None and self.running.get(known) == call:
            return known
        acp_id = self.fresh(call)
        self.unshown.add(acp_id)
        return acp_id

    def task_call(self, call_id: str) -> str | None:
        """The ACP id of the running `task` call with the model's id `call_id` (a child's progress is its)."""
        acp_id = self.ids.get(call_id)
        call = self.running.get(acp_id) if acp_id is not None else None
        return acp_id if call is not None and call.name == "task" else None

    def settled(self, acp_id: str, allowed: bool) -> None:
        """A question answered: a call shown only by it ends there (what it does next is the child's)."""
        if acp_id in self.unshown:
            self.unshown.discard(acp_id)
            what = "allowed: the task's child agent runs it" if allowed else "rejected: the child agent is told so"
            self.post(schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=acp_id,
                                              status="completed" if allowed else "failed", content=[text_content(what)]))

    def __call__(self, event: object) -> None:
        if isinstance(event, TextDelta):
            self.post(schema.AgentMessageChunk(session_update="agent_message_chunk",
                                               content=schema.TextContentBlock(type="text", text=event.text)))
        elif isinstance(event, ThinkingDelta):
            self.post(schema.AgentThoughtChunk(session_update="agent_thought_chunk",
                                               content=schema.TextContentBlock(type="text", text=event.text)))
        elif isinstance(event, ToolCalled):
            call_id = self.id_of(event.call, new=True)
            self.running[call_id] = event.call
            self.post(started(event.call, event.subject, self.root, call_id))
        elif isinstance(event, ToolStarted):
            call_id = self.id_of(event.call)
            if event.call.name in EDITS:
                self.before[call_id] = self.text_of(event.call)
            self.post(schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                              status="in_progress"))
        elif isinstance(event, ToolFinished):
            self.finished(event.call, event.result)
        elif isinstance(event, Notice) and event.kind == "skill":
            self.skill(event.text)

    def skill(self, note: str) -> None:
        """A skill the person's `$NAME` loaded before the model was asked, shown as a finished call, as one
        the model's load_skill loads is (the note says which, from where, or why not)."""
        n = len([i for i in self.used if i.startswith("skill-")]) + 1
        self.used.add(f"skill-{n}")
        self.post(schema.ToolCallStart(session_update="tool_call", tool_call_id=f"skill-{n}", title=note, kind="think",
                                       status="failed" if "could not be loaded" in note else "completed"))

    def text_of(self, call: ToolCall) -> str | None:
        args = arguments(call)
        if not isinstance(args, dict) or not isinstance(args.get("path"), str):
            return None
        return self.files(absolute(self.root, args["path"]))

    def finished(self, call: ToolCall, result: ToolResult) -> None:
        call_id = self.id_of(call)
        self.running.pop(call_id, None)
        change, before = None, self.before.pop(call_id, None)
        if call.name in EDITS and not result.is_error:
            args = arguments(call)
            path = absolute(self.root, args["path"]) if isinstance(args, dict) and "path" in args else ""
            change = self.writes().pop(path, None)
            if change is None and (after := self.text_of(call)) is not None:
                change = (before, after)
        self.post(schema.ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id,
            status="failed" if result.is_error else "completed",
            content=result_content(call, result, self.root, change), raw_output=result.content))
        if (plan := plan_of(result)) is not None:
            self.post(plan)


def replay(history: list[Message], post: Callable[[Any], None], root: str) -> None:
    """A saved conversation as updates: user and agent messages, and each tool call with its title, kind,
    final status and content (the diff of an edit is its unified diff as text: the old file is gone)."""
    from loopagent.session.typed import typed

    feed = Feed(post, root, lambda path: None)
    for at, message in enumerate(history):
        if isinstance(message, UserMessage):
            words = typed(message.content).split(SKILL_BLOCK)[0]
            while words.startswith(MODE_NOTE) and "]\n\n" in words:  # session.py `set_mode`'s note
                words = words.split("]\n\n", 1)[1]
            post(schema.UserMessageChunk(session_update="user_message_chunk",
                                         content=schema.TextContentBlock(type="text", text=words)))
        elif isinstance(message, AssistantMessage):
            if message.thinking:
                post(schema.AgentThoughtChunk(session_update="agent_thought_chunk",
                                              content=schema.TextContentBlock(type="text", text=message.thinking)))
            if message.text:
                post(schema.AgentMessageChunk(session_update="agent_message_chunk",
                                              content=schema.TextContentBlock(type="text", text=message.text)))
            results = answers(history, at)
            for call in message.tool_calls:
                result = results.get(call.id)
                status = "pending" if result is None else "failed" if result.is_error else "completed"
                content = None if result is None else [text_content(result.content)]
                post(started(call, "", root, feed.id_of(call, new=True), status, content))
                if result is not None and (plan := plan_of(result)) is not None:
                    post(plan)


def answers(history: list[Message], at: int) -> dict[str, ToolResult]:
    """The results that answer the assistant message at `at` (those right after it), by call id: servers
    that number calls per reply reuse ids across replies."""
    found: dict[str, ToolResult] = {}
    for message in history[at + 1:]:
        if not isinstance(message, ToolResult):
            break
        found.setdefault(message.call_id, message)
    return found
