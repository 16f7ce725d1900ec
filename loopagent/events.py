"""Agent events: plain frozen values handed to listeners.

The terminal renderer, the JSON printer, the session writer, the stderr notes and tests all
read this one stream: what a person or a script sees and what is written to disk all come from
it. Listeners observe; they never steer the loop (a listener that fails records its failure and
the loop asks for it between steps, see `Steering.health` in loop.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage

Status = Literal[
    "completed", "check_failed", "output_invalid", "step_limit", "token_limit", "time_limit", "loop_detected",
    "approval_required", "incomplete_model_turn", "model_error", "aborted", "error",
]

EXIT_CODES: dict[str, int] = {
    "completed": 0,
    "check_failed": 5,  # the model finished but the --check command still fails
    "output_invalid": 6,  # the final answer is not valid against --output-schema, also when asked again
    "step_limit": 3,
    "token_limit": 3,
    "time_limit": 3,
    "loop_detected": 3,
    "approval_required": 4,
    "incomplete_model_turn": 1,
    "model_error": 1,
    "error": 1,
    "aborted": 130,
}


@dataclass(frozen=True)
class SessionStarted:
    """A session file is open: new (`header` is its first line, for the writer to write) or resumed
    (`header` None). Also the context size in force and where it came from."""

    id: str
    path: str
    ctx_size: int = 0
    ctx_source: str = "default"  # flag | config | server | default
    header: dict | None = None


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
    """A model request begins: an answer to the conversation, or a summary that compacts it."""

    step: int
    purpose: Literal["answer", "compact"] = "answer"


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
    """A call passed validation and policy and is about to run (its checkpoint, if any, is already taken)."""

    call: ToolCall
    read_only: bool


@dataclass(frozen=True)
class ToolFinished:
    """A call's result as the history keeps it: emitted after every rewrite (the repeat warning),
    so this is what the session file stores and what the next request sends."""

    call: ToolCall
    result: ToolResult


@dataclass(frozen=True)
class TurnEnd:
    step: int
    usage: Usage


@dataclass(frozen=True)
class Notice:
    """Something a person should know that is not part of the conversation (repairs, warnings, nudges).

    Kinds in `STDERR_KINDS` are diagnostics: shown on stderr (render/notes.py), not among the answer.
    A `repair` may carry the bytes it `dropped`, which the session's repair record keeps.
    """

    kind: str
    text: str
    dropped: str = ""


STDERR_KINDS = frozenset({"repair", "warning", "note"})


@dataclass(frozen=True)
class ContextEdit:
    """From this request on, the result at history `index` is sent as `content` (a stub of a superseded
    result, or a clip of a large one); the history and the session's message keep the original."""

    index: int
    kind: Literal["stub", "clip"]
    content: str


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
class HookRan:
    """One of the user's hooks ran (loopagent/hooks.py): which, about which tool, and what it decided."""

    kind: str  # pre_tool, post_tool, stop, session_start
    command: str
    tool: str = ""
    verdict: Literal["ok", "block", "failed"] = "ok"
    reason: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class CheckRan:
    """The completion check ran (loopagent/check.py): after a final answer, or on demand (/check)."""

    command: str
    passed: bool
    exit_code: int | None  # None: it timed out, was cancelled or could not start
    attempt: int  # 1 for the first run of this run's check
    output: str = ""  # the tail of what it printed (secrets redacted)
    seconds: float = 0.0
    timed_out: bool = False


@dataclass(frozen=True)
class RunEnd:
    status: Status
    steps: int
    usage: Usage
    message: str = ""
    signal: int = 0  # the signal that stopped an aborted run (SIGTERM, SIGHUP); 0 for Ctrl+C or none
    cost: float | None = None  # USD for `usage` at the user's `prices` (loopagent/prices.py); None: no price
    check: CheckRan | None = None  # the run's last completion check, when one is configured
    output: Any = None  # with --output-schema: the answer's JSON value, valid against it (loopagent.output.Shaped)

    @property
    def exit_code(self) -> int:
        """The process exit code: 128 + the signal for a run a signal stopped (143, 129), else by status."""
        if self.status == "aborted" and self.signal:
            return 128 + self.signal
        return EXIT_CODES[self.status]


Event = (
    SessionStarted | AgentStart | MessageAdded | TurnStart | TextDelta | ThinkingDelta | AssistantDone
    | ToolCalled | ToolStarted | ToolFinished | TurnEnd | TurnTokens | Compacted | ContextEdit | Notice | HookRan
    | CheckRan | RunEnd
)
Listener = Callable[[Event], None]
