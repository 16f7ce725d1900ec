"""Model adapters: they turn a history into one assistant turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message


class ModelError(Exception):
    """The model or its server failed: HTTP errors, unreachable server, an error inside the stream."""


class IncompleteTurn(Exception):
    """The stream ended without a finish reason, or stopped for length: no tool may run."""


class ModelClient(Protocol):
    def complete(
        self, messages: Sequence[Message], tools: list[dict], emit: Callable[[Event], None]
    ) -> AssistantMessage:
        """Stream one turn, emitting text/thinking deltas; raise ModelError or IncompleteTurn."""
        ...
