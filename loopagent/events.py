"""Agent events: plain frozen values handed to listeners.

The terminal renderer, the JSON printer, the session writer, checkpoints and
tests all read this one stream. Listeners observe; they never steer the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage

Status = Literal[
    "completed", "step_limit", "token_limit", "loop_detected", "approval_required",
    "incomplete_model_turn", "model_error", "aborted", "error",
]

EXIT_CODES: dict[str, int] = {
    "completed": 0,
    "step_limit": 3,
    "token_limit": 3,
    "loop_detected": 3,
    "approval_required": 4,
    "incomplete_model_turn": 1,
    "model_error": 1,
    "error": 1,
    "aborted": 130,
}


@dataclass(frozen=True)
class AgentStart:
    task: str


@dataclass(frozen=True)
class MessageAdded:
    """A message joined the history (the session writer appends it to disk)."""

    message: Message
    index: int


@dataclass(frozen=True)
class TurnStart:
    step: int


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class AssistantDone:
    message: AssistantMessage


@dataclass(frozen=True)
class ToolCalled:
    """The loop took up a call (every call, before validation and policy)."""

    call: ToolCall
    subject: str


@dataclass(frozen=True)
class ToolStarted:
    """A call passed validation and policy and is about to run (checkpoints snapshot here)."""

    call: ToolCall
    read_only: bool


@dataclass(frozen=True)
class ToolFinished:
    call: ToolCall
    result: ToolResult


@dataclass(frozen=True)
class TurnEnd:
    step: int
    usage: Usage


@dataclass(frozen=True)
class Notice:
    """Something a person should know that is not part of the conversation (repairs, warnings, nudges)."""

    kind: str
    text: str


@dataclass(frozen=True)
class TurnTokens:
    """What one model request cost: the server's counts when it reported them, else estimates."""

    step: int
    usage: Usage
    tool_share: float  # fraction of the prompt that was tool results (estimated)
    estimated: bool


@dataclass(frozen=True)
class Compacted:
    """The context was compacted: history[:upto] (after the task) is now sent as `summary`.

    The history itself is untouched; a session writer appends this as a record, and a resumed
    session hands it back to `ContextWindow.restore`.
    """

    summary: str
    upto: int
    tokens_before: int
    tokens_after: int
    usage: Usage
    focus: str = ""


@dataclass(frozen=True)
class RunEnd:
    status: Status
    steps: int
    usage: Usage
    message: str = ""
    signal: int = 0  # the signal that stopped an aborted run (SIGTERM, SIGHUP); 0 for Ctrl+C or none

    @property
    def exit_code(self) -> int:
        """The process exit code: 128 + the signal for a run a signal stopped (143, 129), else by status."""
        if self.status == "aborted" and self.signal:
            return 128 + self.signal
        return EXIT_CODES[self.status]


Event = (
    AgentStart | MessageAdded | TurnStart | TextDelta | ThinkingDelta | AssistantDone
    | ToolCalled | ToolStarted | ToolFinished | TurnEnd | TurnTokens | Compacted | Notice | RunEnd
)
Listener = Callable[[Event], None]
