"""Model adapters: they turn a history into one assistant turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message


class ModelError(Exception):
    """The model or its server failed: HTTP errors, unreachable server, an error inside the stream."""


class IncompleteTurn(Exception):
    """The turn cannot be used: cut, idle, oversized, empty, filtered or stopped for length. No tool may run.

    `partial` holds what arrived before it ended (text and thinking, never tool calls), or None.
    """

    def __init__(self, message: str, partial: AssistantMessage | None = None):
        super().__init__(message)
        self.partial = partial


class Cancelled(Exception):
    """The cancel signal was set while the turn streamed; `partial` is the text received so far."""

    def __init__(self, partial: AssistantMessage):
        super().__init__("cancelled by the user")
        self.partial = partial


class CancelSignal(Protocol):
    """What a client needs of a cancel token (loopagent.cancel.Cancel has it all): `is_set()`; optionally
    `on_cancel(fn)` (or `add_callback(fn)`), run once on set and returning a function that removes it,
    which lets the client hang up a blocked read at once; and `wait(seconds)`, to sleep interruptibly."""

    def is_set(self) -> bool: ...


class ModelClient(Protocol):
    def complete(
        self, messages: Sequence[Message], tools: list[dict], emit: Callable[[Event], None],
        cancel: CancelSignal | None = None,
    ) -> AssistantMessage:
        """Stream one turn, emitting text/thinking deltas; raise ModelError, IncompleteTurn or Cancelled."""
        ...
