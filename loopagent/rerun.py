"""A replay's verdict: every tool call of a recorded session against the same call run again.

Pure: histories in, verdicts out. Two runs agree on a call when it is the same call (tool and
arguments) at the same place, with the same `is_error` and the same shell exit code; strictly, also
with the same result text once durations and the workspace's path are masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult

USER_DENIAL = "denied: the user did not approve this call"  # loop.py's answer to a "no" at the question
MCP = "mcp__"  # MCP tools' names: a replay starts no MCP server (cli/replay_run.py)
NOT_REPLAYED = "not replayed"
NOT_RUN = "no result"  # the call has no result: not run (a replay cut short), or cut off by a kill
# 0.12s, 3 s, 250ms, 1.5 seconds, 0:00:01.20: whatever a clock put into the text
DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|secs?|seconds?)\b|\b\d+:\d{2}:\d{2}(?:\.\d+)?\b")


@dataclass(frozen=True)
class CallOutcome:
    """One call and what came of it."""

    tool: str
    arguments: str
    is_error: bool
    exit_code: int | None = None
    outcome: str = ""  # details.outcome: ok, error, denied, cancelled, timeout ("" when not recorded)
    text: str = ""

    @property
    def summary(self) -> str:
        """What the table shows: `exit 1`, `ok`, `error`, `denied`..."""
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        return self.outcome or ("error" if self.is_error else "ok")


@dataclass(frozen=True)
class Verdict:
    number: int  # 1-based, in the order the calls were made
    tool: str
    subject: str
    recorded: str
    now: str
    why: str = ""  # empty when the call matches

    @property
    def same(self) -> bool:
        return not self.why


def answered(history: Sequence[Message]) -> list[tuple[ToolCall, ToolResult | None]]:
    """Every tool call of `history` in call order, with the result that answered it (None: none did).
    A result answers a call of the assistant message it follows (ids may repeat across messages)."""
    found: list[tuple[ToolCall, ToolResult | None]] = []
    for i, message in enumerate(history):
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        answers: dict[str, ToolResult] = {}
        for later in history[i + 1:]:
            if isinstance(later, AssistantMessage):
                break
            if isinstance(later, ToolResult):
                answers.setdefault(later.call_id, later)
        found.extend((call, answers.get(call.id)) for call in message.tool_calls)
    return found


def outcomes(history: Sequence[Message]) -> list[CallOutcome]:
    """Every tool call of `history` in call order, each with what came of it."""
    return [outcome(call, result) for call, result in answered(history)]


def outcome(call: ToolCall, result: ToolResult | None) -> CallOutcome:
    if result is None:
        return CallOutcome(call.name, call.arguments, True, outcome=NOT_RUN)
    details = result.details
    return CallOutcome(call.name, call.arguments, result.is_error,
                       details.exit_code if details is not None else None,
                       details.outcome if details is not None else "", result.content)


def refused(history: Sequence[Message]) -> list[ToolCall]:
    """The calls a person refused at the approval question."""
    return [call for call, result in answered(history) if result is not None and result.content.startswith(USER_DENIAL)]


def mask(text: str, roots: Iterable[str] = ()) -> str:
    """`text` without what differs between two runs of the same call: durations and the workspace path."""
    for root in sorted({r for r in roots if r}, key=len, reverse=True):
        text = text.replace(root, "<workspace>")
    return DURATION.sub("<duration>", text)


def compare(recorded: Sequence[CallOutcome], now: Sequence[CallOutcome], strict: bool = False,
            roots: Iterable[str] = ()) -> list[Verdict]:
    """A verdict for every call of either run, in order."""
    roots = tuple(roots)
    verdicts = []
    for k in range(max(len(recorded), len(now))):
        was = recorded[k] if k < len(recorded) else None
        is_ = now[k] if k < len(now) else None
        shown = was or is_
        assert shown is not None
        if was is not None and is_ is not None and was.tool == is_.tool and was.tool.startswith(MCP):
            # an MCP server acts outside the copy (a real repository, a database): never called again
            verdicts.append(Verdict(k + 1, was.tool, subject(was.arguments), was.summary, NOT_REPLAYED))
            continue
        verdicts.append(Verdict(k + 1, shown.tool, subject(shown.arguments),
                                was.summary if was else "-", is_.summary if is_ else "not run",
                                difference(was, is_, strict, roots)))
    return verdicts


def difference(was: CallOutcome | None, is_: CallOutcome | None, strict: bool, roots: tuple[str, ...]) -> str:
    """What differs between a call's recorded and new outcome ('' when nothing does)."""
    if was is not None and was.outcome == NOT_RUN:
        return ""  # the recording ended before this call's outcome was known: nothing to hold it to
    if is_ is None or is_.outcome == NOT_RUN:
        return f"recorded {was.summary if was else '-'}, now not run"
    if was is None:
        return f"not in the recording, now {is_.summary}"
    if (was.tool, was.arguments) != (is_.tool, is_.arguments):
        return f"a different call: recorded {was.tool}, now {is_.tool}"
    if was.exit_code != is_.exit_code:  # first: a shell's exit code says more than its is_error
        return f"recorded {was.summary}, now {is_.summary}"
    if was.is_error != is_.is_error:
        return f"recorded {'an error' if was.is_error else 'success'}, now {'an error' if is_.is_error else 'success'}"
    if strict and mask(was.text, roots) != mask(is_.text, roots):
        return f"result text differs: recorded {first_difference(mask(was.text, roots), mask(is_.text, roots))}"
    return ""


def first_difference(a: str, b: str) -> str:
    """The first line where `a` and `b` differ, as `'<a line>', now '<b line>'`."""
    left, right = a.splitlines(), b.splitlines()
    for k in range(max(len(left), len(right))):
        x = left[k] if k < len(left) else ""
        y = right[k] if k < len(right) else ""
        if x != y:
            return f"line {k + 1} {clip(x)!r}, now {clip(y)!r}"
    return "trailing whitespace"


def subject(arguments: str) -> str:
    """A call's gist for the table: its command or path (the first string argument)."""
    try:
        args = json.loads(arguments)
    except ValueError:
        return clip(arguments)
    if isinstance(args, dict):
        for key in ("command", "path", "pattern", "query"):
            if isinstance(args.get(key), str):
                return clip(args[key])
        first = next((v for v in args.values() if isinstance(v, str)), "")
        return clip(first)
    return clip(arguments)


def clip(text: str, width: int = 48) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def table(verdicts: Sequence[Verdict]) -> list[str]:
    """The calls in aligned columns, each with its verdict."""
    rows = [("#", "tool", "call", "recorded", "now", "verdict")]
    rows += [(str(v.number), v.tool, v.subject, v.recorded, v.now,
              "skipped" if v.now == NOT_REPLAYED else "same" if v.same else f"DIFFERS: {v.why}") for v in verdicts]
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    return ["  ".join(cell.ljust(widths[c]) for c, cell in enumerate(r[:5])) + "  " + r[5] for r in rows]


def conclusion(verdicts: Sequence[Verdict]) -> str:
    """The last line: all the same, or the first divergence."""
    from loopagent.counts import counted

    first = next((v for v in verdicts if not v.same), None)
    if first is None:
        skipped = sum(v.now == NOT_REPLAYED for v in verdicts)
        n = len(verdicts) - skipped
        unreplayed = f" ({counted(skipped, 'MCP call')} not replayed)" if skipped else ""
        if n == 0:  # not "all 0 calls have the recorded outcome"
            return f"replay: no call to compare{unreplayed}"
        calls = f"the {'replayed ' if skipped else ''}call has" if n == 1 else \
            f"all {n} {'replayed ' if skipped else ''}calls have"
        return f"replay: {calls} the recorded outcome{unreplayed}"
    return f"replay: call {first.number} ({first.tool} {first.subject}) diverges: {first.why}"
