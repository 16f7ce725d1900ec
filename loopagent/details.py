"""Typed details of a tool result, for the renderer and the session: what a person sees of a call
without anyone parsing the text the model reads (`ToolResult.content`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
