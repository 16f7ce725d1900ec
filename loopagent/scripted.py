"""A model that answers from a script: the stand-in for a server in tests, benches and embedders.

Each turn is an AssistantMessage, a text string (a final answer), an exception to raise
(ModelError, IncompleteTurn...), or a function of the request's messages returning one of the first two. Listeners see what a stream would have produced: a
ThinkingDelta and a TextDelta per turn, before the finished message is returned. Nothing
here knows the wire format; the real assembler and client are tested against real bytes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from loopagent.errors import Cancelled, ModelError
from loopagent.events import Event, TextDelta, ThinkingDelta
from loopagent.messages import AssistantMessage, Message, ToolCall

if TYPE_CHECKING:
    from loopagent.cancel import Cancel
    from loopagent.tools.spec import ToolSpec

Turn = AssistantMessage | str | BaseException | Callable[[Sequence[Message]], "AssistantMessage | str"]

_ids = itertools.count(1)


def call(name: str, arguments: dict[str, Any] | str | None = None, id: str = "") -> ToolCall:
    """A tool call as a model would send it: arguments as JSON text (a string is kept as it is)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCall(id or f"call_{next(_ids)}", name, text)


def calls(*made: ToolCall, text: str = "") -> AssistantMessage:
    """An assistant turn that makes these calls (and says `text` first)."""
    return AssistantMessage(text=text, tool_calls=made, stop_reason="tool_calls")


class ScriptedModel:
    """Answers each request with the next turn of `turns` (any iterable; itertools.cycle repeats it).

    `summary`, when given, answers requests sent without tools (a compaction summary) and uses no
    turn. Every request is kept in `requests` as (messages, tools); `record=False` keeps none.
    """

    def __init__(self, turns: Iterable[Turn], *, summary: str | AssistantMessage | None = None, record: bool = True,
                 on_request: Callable[[Sequence[Message], Sequence[ToolSpec]], None] | None = None):
        self._turns = iter(turns)
        self.summary, self.record, self.on_request = summary, record, on_request
        self.requests: list[tuple[tuple[Message, ...], list[ToolSpec]]] = []
        self.served = 0

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], emit: Callable[[Event], None],
                 cancel: Cancel) -> AssistantMessage:
        """The next scripted turn; raises a scripted exception, ModelError when the script is over,
        or Cancelled when `cancel` is already set."""
        if self.record:
            self.requests.append((tuple(messages), list(tools)))
        if self.on_request is not None:
            self.on_request(messages, tools)
        if cancel.is_set():
            raise Cancelled(AssistantMessage(stop_reason="incomplete"))
        turn = self._next(tools)
        if isinstance(turn, BaseException):
            raise turn
        message = as_message(turn(messages) if callable(turn) else turn)
        if message.thinking:
            emit(ThinkingDelta(message.thinking))
        if message.text:
            emit(TextDelta(message.text))
        return message

    def _next(self, tools: Sequence[ToolSpec]) -> Turn:
        if self.summary is not None and not tools:
            return self.summary
        try:
            turn = next(self._turns)
        except StopIteration:
            raise ModelError(f"the script has no turn {self.served + 1}; it held {self.served}") from None
        self.served += 1
        return turn


def as_message(turn: AssistantMessage | str) -> AssistantMessage:
    """A turn as the client returns it: stop_reason "tool_calls" whenever calls are present, as a stream's would be."""
    if isinstance(turn, str):
        return AssistantMessage(text=turn)
    if turn.tool_calls and turn.stop_reason == "stop":
        return replace(turn, stop_reason="tool_calls")
    return turn
