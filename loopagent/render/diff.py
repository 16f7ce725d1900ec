"""Unified diffs for people: a `+N -M` summary, coloured lines, long diffs folded with a count.

A diff shows file content and names, so every line shown is escaped (`safe.printable`).
"""

from __future__ import annotations

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


def plain(diff: str, indent: str = "    ", max_lines: int = MAX_LINES, headers: bool = False) -> str:
    """The folded diff as plain text, each line indented; empty for an empty diff."""
    return "".join(f"{indent}{ln}\n" for ln in body_lines(diff, max_lines, headers))


def coloured(diff: str, indent: str = "    ", max_lines: int = MAX_LINES, headers: bool = False) -> Text:
    """The folded diff as Rich text: additions green, removals red, hunk headers cyan, the fold dim."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for ln in body_lines(diff, max_lines, headers):
        if ln.startswith(("--- ", "+++ ", "diff ")):
            style = "bold"
        else:
            style = "dim" if ln.startswith("… ") else STYLES.get(ln[:1], "")
        out.append(indent)
        out.append(ln, style=style)
        out.append("\n")
    out.rstrip()
    return out
