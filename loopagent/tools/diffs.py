"""Diffs of a write or an edit: the unified diff, its counts, and the clipped copy the model reads."""

from __future__ import annotations

import difflib

from loopagent.clip import clip
from loopagent.details import Details

DIFF_MAX_LINES = 400  # diff lines in the model's result; `display` and `details.diff` keep the whole diff


def unified_diff(old: str, new: str, rel: str) -> str:
    """A git-style unified diff, with the 'No newline at end of file' marker where it applies."""
    out = []
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{rel}", f"b/{rel}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff."""
    rows = diff.splitlines()
    return (sum(1 for line in rows if line.startswith("+") and not line.startswith("+++")),
            sum(1 for line in rows if line.startswith("-") and not line.startswith("---")))


def diff_stat(diff: str) -> str:
    added, removed = diff_counts(diff)
    return f"+{added} -{removed} lines"


def clip_diff(diff: str) -> str:
    """The diff as the model reads it: its first DIFF_MAX_LINES lines."""
    return clip(diff, DIFF_MAX_LINES, lines=True)


def changed(diff: str) -> Details:
    """The details of a write or an edit: the whole diff and its counts."""
    added, removed = diff_counts(diff)
    return Details("ok", added=added, removed=removed, diff=diff)
