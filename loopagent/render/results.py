"""Result lines: the word (`ok`, `error`, `denied`, `cancelled`) and the one line a person needs
from a tool result, plus the change to show under it.

A result carries typed `details` (loopagent/details.py) and the line is read from them: the
outcome, the exit code, the line counts, the diff. Results loaded from sessions written before
details existed have none; for those the line is read from the text the model saw, as before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from loopagent.counts import counted
from loopagent.details import Details
from loopagent.messages import ToolCall, ToolResult
from loopagent.render import diff as diffs
from loopagent.render.safe import printable

VERDICT = re.compile(r"\b\d+ (passed|failed)\b")
EXIT_LINE = re.compile(r"^exit(?: code| status)?[: ]+(-?\d+)$")
NUMBERED = re.compile(r"^\s*\d+\t")
HEAD_LINES = 4  # output lines of a command shown under its result line; the rest is counted
# A timeout is a failure of the call, shown as an error; its line says it timed out.
WORDS = {"ok": "ok", "error": "error", "denied": "denied", "cancelled": "cancelled", "timeout": "error"}


@dataclass(frozen=True)
class Shown:
    """What the result line shows: `word: rest`, and a diff to print under it ("" for none)."""

    word: str
    rest: str
    diff: str = ""
    head: tuple[str, ...] = ()  # the first output lines of a command, shown under the line
    more: int = 0  # output lines not shown


def shown(result: ToolResult) -> Shown:
    """The result line of a call, from its details when it has them, else from its text."""
    details = result.details
    if details is None:
        return from_text(result)
    word = WORDS.get(details.outcome, "error" if result.is_error else "ok")
    rest = printable(detailed_line(result, details))
    diff = details.diff if word == "ok" else ""
    if details.exit_code is not None and details.outcome in ("ok", "error"):
        head, more = shell_head(result.content, details.lines or 0)
        if not more:  # every line is shown: a verdict on the result line would say it twice
            rest = printable(shell_line("", details.exit_code, details.lines or 0))
        return Shown(word, rest, "", head, more)
    if diff:
        stat = f"+{details.added or 0} -{details.removed or 0}"
        rest = rest if stat in rest else f"{rest}  {stat}"
    return Shown(word, rest, diff)


def detailed_line(result: ToolResult, details: Details) -> str:
    """The line after the word, for a result with details."""
    first = result.content.split("\n", 1)[0]
    if details.outcome == "denied":
        return denial_reason(result.content)
    if details.outcome == "cancelled":  # "cancelled: by the user after 2.1 s; ...", not its last output line
        return first.removeprefix("cancelled ")
    if details.outcome == "timeout":
        return first
    if details.exit_code is not None:  # shell: the content is an `exit code N` line, then the output
        return shell_line(shell_output(result.content), details.exit_code, details.lines or 0)
    if details.lines is not None:  # read_file: how much of the file the model saw
        return read_line(details.lines, details.total_lines)
    lines = meaningful(result.content)
    if not lines:
        return "(no output)"
    return lines[-1] if result.is_error else lines[0]


def shell_output(content: str) -> str:
    """A shell result's output: its text after the `exit code N` line."""
    return content.split("\n", 1)[1] if "\n" in content else ""


def shell_line(output: str, code: int, count: int) -> str:
    """`exit N, M lines`, and a test verdict when the output has one."""
    size = counted(count, "line") if count else "no output"
    verdict = next((ln.strip("= ") for ln in reversed(meaningful(output)) if VERDICT.search(ln)), "")
    return f"exit {code}, {size}" + (f"; {verdict}" if verdict else "")


def shell_head(content: str, count: int) -> tuple[tuple[str, ...], int]:
    """The first lines of a command's output and how many more there are, as Claude Code shows them.

    The details' line count bounds what is taken: notes the loop appends to the text (a repeat
    warning, a sandbox note) are not output.
    """
    lines = [printable(ln.rstrip()) for ln in shell_output(content).split("\n")[:count]]
    shown_lines = lines if count <= HEAD_LINES + 1 else lines[:HEAD_LINES]
    return tuple(shown_lines), max(0, count - len(shown_lines))


def read_line(lines: int, total: int | None) -> str:
    """`N lines`, or `N of M lines` for a page of a longer file."""
    if total == 0:
        return "empty (0 lines)"
    if total is not None and total > lines:
        return f"{lines} of {total} lines"
    return counted(lines, "line")


def meaningful(content: str) -> list[str]:
    """The lines of a text that say something (have a letter or a digit), stripped."""
    return [ln.strip() for ln in content.splitlines() if any(ch.isalnum() for ch in ln)]


def denial_reason(content: str) -> str:
    """Why a call was denied: the text after `denied...:`, else its first line."""
    if content.startswith("denied"):
        return content.split(":", 1)[1].strip() if ":" in content else content
    return content.split("\n", 1)[0]


# ---- results without details (sessions written before details existed) -----------------------


def summary(content: str, is_error: bool) -> str:
    """The line a person needs from a result: a test verdict, else the first (errors: last) meaningful line."""
    lines = meaningful(content)
    if not lines:
        return "(no output)"
    if NUMBERED.match(content):  # a file read: its size says more than its first line
        count = sum(1 for ln in content.splitlines() if NUMBERED.match(ln))
        return counted(count, "line") + (f"; {lines[-1]}" if lines[-1].startswith("[") else "")
    for ln in reversed(lines):
        if VERDICT.search(ln):
            return ln.strip("= ")
    exit_match = EXIT_LINE.match(lines[0])
    if exit_match:  # shell output: the last line says most; a non-zero code is worth keeping
        code, rest = exit_match.group(1), lines[1:]
        if not rest:
            return lines[0]
        return rest[-1] if code == "0" else f"{rest[-1]} (exit {code})"
    return lines[-1] if is_error else lines[0]


def verdict(result: ToolResult) -> tuple[str, str]:
    """(word, rest) for the result line of a result without details: `ok`, `error` or `denied`."""
    content = result.content
    if result.is_error and content.startswith("denied"):
        return "denied", denial_reason(content)
    first = content.split("\n", 1)[0]
    if result.is_error and "needs approval" in first:
        return "denied", first
    if result.is_error and first.startswith(("cancelled by the user", "timed out after")):
        return "error", printable(first)  # what happened to the call, not its last output line
    return ("error" if result.is_error else "ok"), summary(content, result.is_error)


def looks_like_diff(text: str) -> bool:
    """Whether a text (an approval preview, an old result's display) is a unified diff."""
    return text.startswith(("--- ", "@@")) or "\n@@ " in text


def from_text(result: ToolResult) -> Shown:
    """The result line of a result without details, read from its text."""
    word, rest = verdict(result)
    rest, display = printable(rest), result.display
    if not (looks_like_diff(display) and not result.is_error):
        return Shown(word, rest)
    stat = diffs.summary(display)
    return Shown(word, rest if stat in rest else f"{rest}  {stat}", display)


def subject_of(call: ToolCall, subject: str) -> str:
    """What the tool line names; for a call whose arguments failed validation, a short key=value form."""
    if subject:
        return printable(subject)
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        return "(arguments are not JSON)"
    if not isinstance(args, dict):
        return ""
    return printable(" ".join(f"{k}={str(v)[:40]}" for k, v in list(args.items())[:3]))
