"""Clipping: the head and tail of a text that is too long, with one marker saying what is missing.

Every place that shortens text for the model (tool results, the shell's output buffer, long lines
of a read or a grep, diffs, older results in the context) uses `clip`, so the model learns one
marker: `[... N lines (M bytes) clipped ...]` (`[... M bytes clipped ...]` when no line break is
missing). N counts the line breaks left out, so the text is N lines shorter; M counts UTF-8 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gap:
    """What a caller already left out before the text reached `clip`: a stream's middle that was never
    kept, the unread rest of a line. It lies where the head ends."""

    lines: int = 0
    bytes: int = 0


NO_GAP = Gap()


def size_of(text: str) -> int:
    """UTF-8 bytes of `text`; never raises (a lone surrogate counts as its three bytes)."""
    return len(text.encode("utf-8", errors="surrogatepass"))


def marker(lines: int, size: int, note: str = "") -> str:
    """The clip marker; `note` (e.g. "to save context; run the tool again to see them") follows "clipped"."""
    what = f"{lines} line{'' if lines == 1 else 's'} ({size} bytes)" if lines else f"{size} bytes"
    return f"[... {what} clipped{' ' + note if note else ''} ...]"


def clip(text: str, head: int, tail: int = 0, *, lines: bool = False, gap: Gap = NO_GAP, note: str = "") -> str:
    """`text` unchanged when it fits in head + tail (and nothing was left out before), else its first
    `head` and last `tail` characters (`lines=True`: lines) around the marker.

    A multi-line text is cut at line boundaries when one lies in the back half of the head (the
    front half of the tail), so no half lines surround the marker, which then stands on its own line;
    a single line keeps the marker inline. The tail usually holds what matters (a traceback's end,
    a test summary), so callers give it the larger share.
    """
    head, tail = max(0, head), max(0, tail)
    if lines:
        head, tail = line_offsets(text, head, tail)
    if len(text) <= head + tail and not gap.bytes:
        return text
    if len(text) <= head + tail:  # everything given is kept; the gap sits after the head
        tail = len(text) - head
    start, end = snap_head(text, head), len(text) - snap_tail(text, tail)
    if end < start:
        end = start
    hidden = text[start:end]
    shown = marker(hidden.count("\n") + gap.lines, size_of(hidden) + gap.bytes, note)
    first, last = text[:start], text[end:]
    if "\n" not in text:
        return f"{first} {shown}" + (f" {last}" if last else "")
    return (first if not first or first.endswith("\n") else first + "\n") + shown + ("\n" + last if last else "\n")


def line_offsets(text: str, head: int, tail: int) -> tuple[int, int]:
    """Characters of the first `head` and the last `tail` lines of `text`."""
    rows = text.splitlines(keepends=True)
    if head + tail >= len(rows):
        return len(text), 0
    return sum(map(len, rows[:head])), sum(map(len, rows[len(rows) - tail:]))


def snap_head(text: str, head: int) -> int:
    """Where the head ends: after the last line break in its back half, else at `head` characters."""
    if head >= len(text):
        return len(text)
    nl = text.rfind("\n", head // 2, head)
    return nl + 1 if nl >= 0 else head


def snap_tail(text: str, tail: int) -> int:
    """How many characters the tail keeps: from the first line break in its front half, else `tail`."""
    if tail <= 0:
        return 0
    start = len(text) - tail
    if start <= 0 or text[start - 1] == "\n":
        return tail
    nl = text.find("\n", start, start + (tail + 1) // 2)
    return len(text) - (nl + 1) if nl >= 0 else tail
