"""Stopping guards: identical calls repeated in a row, and final answers that ask or defer.

A stuck model does not notice it is stuck, so the loop watches for it. Pure values; the loop
decides what to do with a verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from loopagent.events import Event, Notice
from loopagent.messages import ToolCall, ToolResult

QUESTION_NUDGE = ("No one can answer questions in this run. If the task is finished, say so and summarise; "
                  "if not, continue and record your assumptions.")
NUDGE_AT = 3  # identical call + result this many times in a row: tell the model
STOP_AT = 5  # ...this many times: stop the run
TIMES = {3: "three", 4: "four"}

CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
# Announcing work instead of doing it, or handing a decision back to a user who is not there.
DEFERS = re.compile(
    r"\b(next,? (i'll|i will|i'm going to|let me)|(now|then) (i'll|i will|let me)|i('ll| will) (now|next|then|start|"
    r"continue|proceed|go ahead)|i'm going to|i am going to|let me (now )?(run|check|fix|update|look|try|read|"
    r"edit|add|write|implement|make|start|continue|verify|test|create|open|search|inspect)|let me know|"
    r"would you like|do you want|shall i|should i)\b",
    re.I,
)
POLLING = re.compile(r"\bsleep\b|\bwatch\b")


def is_nudge(text: str) -> bool:
    """A user message the loop wrote itself (it need not survive compaction)."""
    return text == QUESTION_NUDGE


def asks_or_defers(text: str) -> bool:
    """Does this final answer end with a question or announce a next step it did not take?"""
    prose = CODE.sub("", text).strip()
    if not prose:
        return False
    last = re.split(r"\n\s*\n", prose)[-1]
    return "?" in last or DEFERS.search(last) is not None


def _key(call: ToolCall, result: ToolResult) -> tuple[str, str, str, bool]:
    try:
        args = json.dumps(json.loads(call.arguments or "{}"), sort_keys=True)
    except ValueError:
        args = call.arguments
    return call.name, args, result.content, result.is_error


def _polls(call: ToolCall) -> bool:
    """A command that waits on purpose (sleep, watch) is polling: the same answer is not a loop."""
    return call.name == "shell" and POLLING.search(call.arguments) is not None


@dataclass
class Repeats:
    """Counts identical calls (same tool, arguments and result) in a row across turns."""

    emit: Callable[[Event], None] = lambda event: None
    last: tuple | None = None
    count: int = 0

    @property
    def stuck(self) -> bool:
        return self.count >= STOP_AT

    def observe(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """The result to record: with a nudge appended from the third identical call on."""
        key = None if _polls(call) else _key(call, result)
        self.count = self.count + 1 if key is not None and key == self.last else 1
        self.last = key
        if self.count < NUDGE_AT:
            return result
        times = TIMES.get(self.count, str(self.count))
        if self.stuck:
            note = f"stopped: {call.name} ran {self.count} times in a row with the same arguments and result"
            seen = note
        else:
            # The model reads a nudge addressed to it; the person watching reads what happened.
            note = f"you have run this {times} times with the same result; change approach"
            seen = (f"the model ran {call.name} {times} times in a row with the same arguments and result; "
                    "it was told to change approach")
        self.emit(Notice("loop", seen))
        return replace(result, content=f"{result.content}\n\n[loop: {note}]")
