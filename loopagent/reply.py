"""One model reply that a cancel token can stop at any moment: waiting, or in the middle of the stream.

The client streams in a worker thread while the caller waits for the reply or the token,
whichever comes first, so a server that has not sent a byte yet cannot hold a Ctrl+C up.
On cancel the caller gets what had streamed so far as an interrupted assistant message;
the worker's later deltas reach no listener, and its next one ends it (leaving the client's
`with` closes the stream). The client is given the token too, so it can close the stream at
once (see ModelClient).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from loopagent.cancel import Cancel
from loopagent.events import Event, TextDelta, ThinkingDelta
from loopagent.messages import AssistantMessage, Message

if TYPE_CHECKING:
    from loopagent.client import ModelClient
    from loopagent.tools.spec import ToolSpec


class Abandoned(Exception):
    """Raised inside an abandoned worker at its next delta, to unwind the client's stream."""


class Reply:
    """The worker's side: forwards deltas while the turn is live and keeps them for a partial answer."""

    def __init__(self, emit: Callable[[Event], None], cancel: Cancel):
        self.emit, self.cancel = emit, cancel
        self.gate = threading.Lock()  # no delta reaches a listener after the caller gave up
        self.abandoned = False
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.done = threading.Event()
        self.message: AssistantMessage | None = None
        self.error: BaseException | None = None

    def forward(self, event: Event) -> None:
        with self.gate:
            if self.abandoned:
                raise Abandoned
            if isinstance(event, TextDelta):
                self.text.append(event.text)
            elif isinstance(event, ThinkingDelta):
                self.thinking.append(event.text)
            self.emit(event)

    def produce(self, model: ModelClient, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> None:
        try:
            self.message = model.complete(messages, tools, self.forward, self.cancel)
        except BaseException as exc:  # handed to the waiting thread, which raises it there
            self.error = exc
        finally:
            self.done.set()

    def partial(self) -> AssistantMessage:
        """What streamed before the cancel, marked interrupted (it may be empty)."""
        with self.gate:
            self.abandoned = True
            return AssistantMessage(text="".join(self.text), thinking="".join(self.thinking),
                                    stop_reason="interrupted")


def stream_reply(model: ModelClient, messages: Sequence[Message], tools: Sequence[ToolSpec],
                 emit: Callable[[Event], None], cancel: Cancel) -> AssistantMessage:
    """The model's reply, or (once `cancel` is set) the partial one with stop_reason "interrupted".

    Raises what the client raised (ModelError, IncompleteTurn) when the turn was not cancelled.
    """
    reply = Reply(emit, cancel)
    stop = cancel.on_cancel(reply.done.set)
    worker = threading.Thread(target=reply.produce, args=(model, messages, tools), name="loop-model", daemon=True)
    worker.start()
    try:
        reply.done.wait()
    finally:
        stop()
    if cancel.is_set():
        return reply.partial()
    if reply.error is not None:
        raise reply.error
    assert reply.message is not None
    return reply.message
