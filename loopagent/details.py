"""Typed details of a tool result, for the renderer and the session: what a person sees of a call
without anyone parsing the text the model reads (`ToolResult.content`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

Outcome = Literal["ok", "error", "denied", "cancelled", "timeout"]


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
        values[name] = value
    return Details(**values)


def _fits(name: str, value: object) -> bool:
    if name == "outcome":
        return value in get_args(Outcome)
    if name in ("diff", "diagnostics"):
        return isinstance(value, str)
    if name == "clipped":
        return isinstance(value, bool)
    return value is None or (isinstance(value, int) and not isinstance(value, bool))
