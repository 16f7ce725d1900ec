"""Model adapters: they turn a history into one assistant turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from loopagent.errors import Cancelled, IncompleteTurn, ModelError, ServerUnavailable
from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message

__all__ = ["CancelSignal", "Cancelled", "IncompleteTurn", "ModelClient", "ModelError",
           "ServerUnavailable"]  # errors: see loopagent/errors.py


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
