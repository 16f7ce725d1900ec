"""Which diagnostics an edit introduced, and the short block the model reads about them.

A server reports every problem of a file; the model needs only what its edit broke. A diagnostic
after the edit is old when one with the same severity and message stood before it at the same
place, moved with the edit: lines the edit left alone map to their new numbers, a line it
changed maps nowhere (what sits on it now is new). Pure: values in, values out.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

ERROR, WARNING = 1, 2  # LSP DiagnosticSeverity; a diagnostic without one counts as an error
MAX_LINES = 20  # lines of the block, its heading and clip marker included
MESSAGE_CHARS = 200  # of one message, on its one line


@dataclass(frozen=True)
class Diagnostic:
    """One problem the server reported; `line` and `character` are 0-based, as LSP counts."""

    line: int
    character: int
    severity: int
    message: str
    source: str = ""


def parse(items: Any) -> list[Diagnostic]:
    """The well-formed diagnostics of a `publishDiagnostics` list; a malformed one is skipped."""
    found = []
    for item in items if isinstance(items, list) else ():
        try:
            start = item["range"]["start"]
            line, character, message = start["line"], start["character"], item["message"]
            severity = item.get("severity") or ERROR
            source = item.get("source") or ""
        except (KeyError, TypeError, AttributeError):
            continue
        if (all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (line, character))
                and isinstance(message, str) and severity in (1, 2, 3, 4) and isinstance(source, str)):
            found.append(Diagnostic(line, character, severity, message, source))
    return found


def line_map(old: str, new: str) -> Callable[[int], int | None]:
    """Old line number -> its number after the edit, or None for a line the edit changed (0-based)."""
    moved: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old.split("\n"), new.split("\n"), autojunk=False)
    for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            moved.update((i, j1 + i - i1) for i in range(i1, i2))
    return moved.get


def new_since(before: Iterable[Diagnostic], after: Iterable[Diagnostic], old: str, new: str,
              warnings: bool = False) -> list[Diagnostic]:
    """The diagnostics of `after` (on `new`) that `before` (on `old`) did not have, errors only unless
    `warnings`; a repeated identical diagnostic counts as many times as it stands."""
    wanted = (ERROR, WARNING) if warnings else (ERROR,)
    moved = line_map(old, new)
    stood = Counter()
    for d in before:
        line = moved(d.line)
        if line is not None:
            stood[(line, d.character, d.severity, d.message)] += 1
    fresh = []
    for d in sorted(after, key=lambda d: (d.line, d.character)):
        if d.severity not in wanted:
            continue
        key = (d.line, d.character, d.severity, d.message)
        if stood[key] > 0:
            stood[key] -= 1
        else:
            fresh.append(d)
    return fresh


def block(rel: str, found: list[Diagnostic], most: int = MAX_LINES) -> str:
    """`2 new errors:` and one `path:line:col message` line each (1-based), at most `most` lines."""
    if not found:
        return ""
    errors = sum(1 for d in found if d.severity == ERROR)
    parts = [counted_new(errors, "error"), counted_new(len(found) - errors, "warning")]
    lines = [", ".join(p for p in parts if p) + ":"]
    for d in found:
        kind = "" if d.severity == ERROR else "warning: "
        message = " ".join(d.message.split())
        if len(message) > MESSAGE_CHARS:
            message = message[: MESSAGE_CHARS - 3] + "..."
        lines.append(f"{rel}:{d.line + 1}:{d.character + 1} {kind}{message}")
    if len(lines) > most:
        left = len(lines) - (most - 1)
        lines = lines[: most - 1] + [f"[... {left} more not shown]"]
    return "\n".join(lines)


def counted_new(n: int, noun: str) -> str:
    return "" if n == 0 else f"{n} new {noun}{'' if n == 1 else 's'}"
