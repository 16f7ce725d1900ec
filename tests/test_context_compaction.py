"""Compaction as a step of its own: announced before the summary is asked for, and stopped by the turn's cancel token."""

from __future__ import annotations

import threading

import pytest

from loopagent.context import CompactionCancelled, ContextWindow, messages_tokens
from loopagent.events import Compacted, Notice
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult, UserMessage

SYSTEM = SystemMessage("You are loop.")


def history() -> list[Message]:
    out: list[Message] = [SYSTEM, UserMessage("Summarise the files.")]
    for n in range(10):
        call = ToolCall(f"c{n}", "read_file", f'{{"path": "f{n}.py"}}')
        out += [AssistantMessage(tool_calls=(call,), stop_reason="tool_calls"),
                ToolResult(call.id, "read_file", "\n".join(f"f{n} line {i}: total = {i * 3}" for i in range(12)))]
    return out


class Model:
    """A stand-in client that takes a cancel token, as the real one does; `cancel_on_call` plays a Ctrl+C
    arriving while the summary streams (the real client then raises)."""

    def __init__(self, cancel_on_call: threading.Event | None = None) -> None:
        self.requests: list = []
        self.cancel_on_call = cancel_on_call

    def complete(self, messages, tools, emit, cancel=None) -> AssistantMessage:
        self.requests.append((list(messages), cancel))
        if self.cancel_on_call is not None:
            self.cancel_on_call.set()
            raise RuntimeError("stream closed")
        return AssistantMessage(text="Read f0-f9; each lists totals.")


def window_for(h: list[Message]) -> ContextWindow:
    return ContextWindow(ctx_size=2 * (messages_tokens(h) - 150), reserve=1 << 20)


def test_the_compaction_is_announced_before_the_model_is_asked_and_gets_the_cancel_token():
    h, seen, cancel = history(), [], threading.Event()
    model = Model()

    def emit(event):
        seen.append((event, len(model.requests)))

    window_for(h).prepare(h, [], model, emit, cancel=cancel)
    (notice, asked_before), (done, asked_after) = [(e, n) for e, n in seen if isinstance(e, (Notice, Compacted))]
    assert isinstance(notice, Notice) and notice.kind == "compact" and asked_before == 0
    assert "older messages" in notice.text and isinstance(done, Compacted) and asked_after == 1
    assert model.requests[0][1] is cancel


def test_a_cancel_during_the_summary_stops_the_turn_as_aborted():
    h, cancel = history(), threading.Event()
    model = Model(cancel_on_call=cancel)
    window = window_for(h)
    with pytest.raises(CompactionCancelled) as info:
        window.prepare(h, [], model, cancel=cancel)
    assert info.value.status == "aborted" and len(model.requests) == 1
    assert window.summary == ""  # nothing half-done is kept


def test_a_cancel_set_before_compaction_asks_nothing():
    h, cancel = history(), threading.Event()
    cancel.set()
    model = Model()
    with pytest.raises(CompactionCancelled):
        window_for(h).prepare(h, [], model, cancel=cancel)
    assert model.requests == []


def test_a_failing_summary_without_a_cancel_still_propagates():
    h = history()
    model = Model(cancel_on_call=threading.Event())  # it raises, but no token was handed in
    with pytest.raises(RuntimeError):
        window_for(h).prepare(h, [], model)
