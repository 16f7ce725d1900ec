"""Unified diffs for people: a `+N -M` summary, coloured lines, long diffs folded with a count.

A diff shows file content and names, so every line shown is escaped (`safe.printable`).
"""

from __future__ import annotations

from rich.cells import cell_len, chop_cells, set_cell_size
from rich.text import Text

from loopagent.render.safe import printable

# More lines than this are folded: the head is shown, then how many lines were left out.
MAX_LINES = 40

STYLES = {"+": "green", "-": "red", "@": "cyan"}


def stats(diff: str) -> tuple[int, int]:
    """(added, removed) line counts of a unified diff, file headers excluded."""
    added = removed = 0
    for line in diff.split("\n"):  # not splitlines(): a `\r` inside a line is content, shown escaped
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def summary(diff: str) -> str:
    """`+N -M`, the size of a change at a glance."""
    added, removed = stats(diff)
    return f"+{added} -{removed}"


def body_lines(diff: str, max_lines: int = MAX_LINES, headers: bool = False) -> list[str]:
    """The diff's lines, folded; without `---`/`+++` headers unless asked (a tool line already names the file)."""
    lines = [printable(ln) for ln in diff.split("\n") if headers or not ln.startswith(("--- ", "+++ "))]
    if lines and not lines[-1]:
        lines.pop()
    if len(lines) <= max_lines:
        return lines
    kept = lines[:max_lines]
    return [*kept, f"… {len(lines) - max_lines} more diff lines"]


def rows(diff: str, indent: str = "    ", max_lines: int = MAX_LINES, headers: bool = False,
         width: int | None = None) -> list[tuple[str, str]]:
    """(text, style) per screen row. Given a width, a long line wraps: its first row has the line's
    `+`/`-`/` ` marker, the rows that continue it start under its text with no marker, so one changed
    line never reads as two and the rows agree with the `+N -M` counts; hunk headers are cut instead."""
    out: list[tuple[str, str]] = []
    for ln in body_lines(diff, max_lines, headers):
        if ln.startswith(("--- ", "+++ ", "diff ")):
            style = "bold"
        else:
            style = "dim" if ln.startswith("… ") else STYLES.get(ln[:1], "")
        out += [(indent + row, style) for row in wrapped(ln, width - len(indent) if width else None)]
    return out


def wrapped(line: str, room: int | None) -> list[str]:
    """A diff line cut into rows of at most `room` cells: the marker, then its text; continuation rows
    keep the marker's column blank (a second `+` would count as a second added line)."""
    if room is None or room < 12 or cell_len(line) <= room:
        return [line]
    marker = line[:1]
    if marker not in "+- " or line.startswith(("+++ ", "--- ")):
        return [set_cell_size(line, room - 1) + "…"]
    first, *more = chop_cells(line[1:].expandtabs(4), room - 1)
    return [marker + first, *(" " + chunk for chunk in more)]


def plain(diff: str, indent: str = "    ", max_lines: int = MAX_LINES, headers: bool = False,
          width: int | None = None) -> str:
    """The folded diff as plain text, each row indented; empty for an empty diff."""
    return "".join(f"{text}\n" for text, _ in rows(diff, indent, max_lines, headers, width))


def coloured(diff: str, indent: str = "    ", max_lines: int = MAX_LINES, headers: bool = False,
             width: int | None = None) -> Text:
    """The folded diff as Rich text: additions green, removals red, hunk headers cyan, the fold dim."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for text, style in rows(diff, indent, max_lines, headers, width):
        out.append(text[:len(indent)])
        out.append(text[len(indent):], style=style)
        out.append("\n")
    out.rstrip()
    return out
