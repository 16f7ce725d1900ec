"""Typed details of a tool result, for the renderer and the session: what a person sees of a call
without anyone parsing the text the model reads (`ToolResult.content`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

Outcome = Literal["ok", "error", "denied", "cancelled", "timeout"]
TODO_STATUSES = ("pending", "in_progress", "completed")
MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


@dataclass(frozen=True)
class Details:
    """What a call did. Fields a tool has nothing to say about stay None (or "")."""

    outcome: Outcome = "ok"
    exit_code: int | None = None  # shell: the command's exit status (None: killed, never exited)
    lines: int | None = None  # lines the result shows: shell output lines, read_file's page
    total_lines: int | None = None  # read_file: lines in the file (None: too large to count)
    added: int | None = None  # write_file / edit_file: diff lines added ...
    removed: int | None = None  # ... and removed
    diff: str = ""  # write_file / edit_file: the whole unified diff (the model's copy may be clipped)
    clipped: bool = False  # the content the model reads was shortened
    # todo_write: the model's checklist as it now stands, (content, status) pairs (status: TODO_STATUSES)
    todos: tuple[tuple[str, str], ...] | None = None
    # task: the child agent's session, model requests and tokens (counted against the parent's limits)
    session: str = ""
    steps: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    diagnostics: str = ""  # write_file / edit_file: the language server's new errors (loopagent/lsp/)


def details_record(details: Details) -> dict:
    """The fields that differ from their defaults, for a session record."""
    return {f.name: getattr(details, f.name) for f in fields(Details)
            if getattr(details, f.name) != f.default}


def details_from(rec: object) -> Details | None:
    """Details read back from a session record; None when the record is not one (an old or edited
    file loses its details, never its message)."""
    if not isinstance(rec, dict):
        return None
    known = {f.name: f for f in fields(Details)}
    values = {}
    for name, value in rec.items():
        f = known.get(name)
        if f is None:
            continue  # a field a later version wrote
        if not _fits(name, value):
            return None
        values[name] = tuple((c, s) for c, s in value) if name == "todos" and value is not None else value
    return Details(**values)


def _fits(name: str, value: object) -> bool:
    if name == "outcome":
        return value in get_args(Outcome)
    if name in ("diff", "session", "diagnostics"):
        return isinstance(value, str)
    if name == "clipped":
        return isinstance(value, bool)
    if name == "todos":
        return value is None or (isinstance(value, (list, tuple)) and all(
            isinstance(t, (list, tuple)) and len(t) == 2 and isinstance(t[0], str) and t[1] in TODO_STATUSES
            for t in value))
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def checklist(todos: tuple[tuple[str, str], ...]) -> str:
    """The checklist as plain text, one `[x] item` line each (what the model reads back)."""
    if not todos:
        return "(the todo list is empty)"
    return "\n".join(f"{MARKS.get(status, '[ ]')} {content}" for content, status in todos)
