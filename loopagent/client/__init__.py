"""Model adapters: they turn a history into one assistant turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from loopagent.errors import Cancelled, IncompleteTurn, ModelError, ServerUnavailable
from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message

if TYPE_CHECKING:
    from loopagent.cancel import Cancel
    from loopagent.tools.spec import ToolSpec

__all__ = ["Cancelled", "IncompleteTurn", "ModelClient", "ModelError",
           "ServerUnavailable"]  # errors: see loopagent/errors.py


class ModelClient(Protocol):
    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], emit: Callable[[Event], None],
        cancel: Cancel,
    ) -> AssistantMessage:
        """Stream one turn, emitting text/thinking deltas; raise ModelError, IncompleteTurn or Cancelled.
        `cancel` is the turn's token: once set, the client stops waiting (it hangs up a blocked read
        through `on_cancel`, sleeps between retries with `wait`) and raises Cancelled."""
        ...
