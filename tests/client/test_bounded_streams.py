"""Bounded streams through the real client over real HTTP: idle deadlines, huge lines, stop reasons, cancel."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from loopagent.cancel import Cancel
from loopagent.client import Cancelled, IncompleteTurn
from loopagent.client.openai import OpenAIClient
from loopagent.client.sse import SSEDecoder
from loopagent.events import TextDelta
from loopagent.messages import AssistantMessage, UserMessage
from tests.fakeserver import FakeServer, Reply, _chunk, error, text_events, tool_events


def complete(server: FakeServer, emit=lambda e: None, cancel=None, **kw) -> AssistantMessage:
    client = OpenAIClient(base_url=server.url, model="m", backoff=0.001, **kw)
    try:
        return client.complete([UserMessage("hi")], [], emit, cancel or Cancel())
    finally:
        client.close()


def forever(piece: bytes, head: bytes = b"") -> Iterator[bytes]:
    if head:
        yield head
    while True:
        yield piece


KEEPALIVE = b": keep-alive\n\n"
EMPTY_DELTA = b"data: " + json.dumps(_chunk({})).encode() + b"\n\n"
ROLE_ONLY = b"data: " + json.dumps(_chunk({"role": "assistant", "content": ""})).encode() + b"\n\n"


@pytest.mark.parametrize("piece", [KEEPALIVE, EMPTY_DELTA, ROLE_ONLY], ids=["keep-alive", "empty", "role"])
def test_a_stream_that_never_says_anything_ends_at_the_idle_deadline(piece):
    with FakeServer([Reply(stream=lambda: forever(piece), delay=0.02)]) as srv:
        start = time.monotonic()
        with pytest.raises(IncompleteTurn, match=r"no text, thinking or tool call for 0\.5 s") as info:
            complete(srv, read_timeout=0.5)
        assert time.monotonic() - start < 5
    assert "LOOP_READ_TIMEOUT" in str(info.value)
    assert ("keep-alive comment" in str(info.value)) == (piece == KEEPALIVE)


def test_the_idle_deadline_keeps_the_partial_text_and_moves_with_progress():
    # Text keeps arriving for longer than the deadline, then only keep-alives.
    pieces = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in text_events("x" * 100, finish=None)]

    def stream() -> Iterator[bytes]:
        yield from pieces
        yield from forever(KEEPALIVE)

    with FakeServer([Reply(stream=stream, delay=0.05)]) as srv:
        with pytest.raises(IncompleteTurn) as info:
            complete(srv, read_timeout=0.3)
    assert info.value.partial is not None and info.value.partial.text == "x" * 100
    assert len(pieces) * 0.05 > 0.3  # the text alone took longer than the deadline


def test_a_finished_reply_whose_stream_never_closes_is_still_the_answer():
    head = "".join(f"data: {json.dumps(c)}\n\n" for c in text_events("all here")).encode()
    with FakeServer([Reply(stream=lambda: forever(KEEPALIVE, head), delay=0.02)]) as srv:
        assert complete(srv, read_timeout=0.3).text == "all here"


def test_an_unterminated_line_over_16_mb_is_an_incomplete_turn():
    def stream() -> Iterator[bytes]:
        yield b"data: " + json.dumps(_chunk({"content": "before "})).encode() + b"\n\n"
        yield b'data: {"choices": [{"delta": {"content": "'
        for _ in range(20 * 16):  # 20 MB, no newline
            yield b"a" * 65536

    with FakeServer([Reply(stream=stream)]) as srv:
        with pytest.raises(IncompleteTurn, match="passed 16 MB without ending") as info:
            complete(srv)
    assert info.value.partial.text == "before "


def test_many_data_lines_of_one_event_are_bounded_too():
    decoder = SSEDecoder(max_bytes=1000)
    with pytest.raises(Exception, match="one event's data passed 1000 bytes"):
        for _ in range(100):
            decoder.feed(b"data: " + b"y" * 50 + b"\n")


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_at_every_split(ending):
    raw = b"".join(b": ping" + ending + ending + b"data: " + json.dumps(c).encode() + ending + ending
                   for c in text_events("h\u00e9llo w\u00f6rld"))
    for split in (1, 2, 3, 7, len(raw)):
        decoder, out = SSEDecoder(), []
        for i in range(0, len(raw), split):
            out += decoder.feed(raw[i:i + split])
        out += decoder.close()
        assert "".join(json.loads(d)["choices"][0]["delta"].get("content", "")
                       for d in out if json.loads(d)["choices"]) == "h\u00e9llo w\u00f6rld"
        assert decoder.comments == len(text_events("h\u00e9llo w\u00f6rld"))


# ---- stop reasons ---------------------------------------------------------------------------------

def test_content_filter_with_a_tool_call_is_an_incomplete_turn_that_names_it():
    events = tool_events(("shell", {"command": "touch canary"}), finish="content_filter")
    with FakeServer([Reply(events=events)]) as srv:
        with pytest.raises(IncompleteTurn, match="content filter.*its 1 tool call did not run") as info:
            complete(srv)
    assert info.value.partial.tool_calls == ()


@pytest.mark.parametrize("reason", ["abort", "error", "insufficient_system_resource"])
def test_an_unknown_finish_reason_runs_nothing(reason):
    with FakeServer([Reply(events=tool_events(("read_file", {"path": "a"}), finish=reason))]) as srv:
        with pytest.raises(IncompleteTurn, match=f"finish_reason '{reason}', not a normal end"):
            complete(srv)


@pytest.mark.parametrize("reason", ["stop", "tool_calls", "function_call", "eos_token", "stop_sequence"])
def test_normal_finish_reasons_still_deliver_the_turn(reason):
    with FakeServer([Reply(events=tool_events(("read_file", {"path": "a"}), finish=reason))]) as srv:
        assert complete(srv).tool_calls[0].name == "read_file"


def test_an_empty_reply_is_reported_as_empty():
    with FakeServer([Reply(events=text_events("")), Reply(events=text_events("  \n"))]) as srv:
        for _ in range(2):
            with pytest.raises(IncompleteTurn, match="empty reply: no text and no tool calls"):
                complete(srv)


def test_a_reply_of_thinking_only_says_so():
    events = [_chunk({"reasoning_content": "hmm"}), _chunk({}, "stop")]
    with FakeServer([Reply(events=events)]) as srv:
        with pytest.raises(IncompleteTurn, match=r"empty reply \(only thinking\)") as info:
            complete(srv)
    assert info.value.partial.thinking == "hmm"


# ---- cancellation -----------------------------------------------------------------------------------

def test_cancel_from_another_thread_hangs_up_a_blocked_read_and_keeps_the_partial_text():
    token, first = Cancel(), threading.Event()
    events = text_events("partial answer", finish=None, usage=None)
    emit = lambda e: first.set() if isinstance(e, TextDelta) else None  # noqa: E731
    setter = threading.Thread(target=lambda: first.wait(10) and token.set())
    with FakeServer([Reply(events=events, done=False, hang_after=True)]) as srv:
        setter.start()
        start = time.monotonic()
        with pytest.raises(Cancelled) as info:
            complete(srv, emit=emit, cancel=token, read_timeout=30)  # the server stays silent after the text
        took = time.monotonic() - start
        setter.join(10)
    assert took < 3
    assert info.value.partial.text == "partial answer" and info.value.partial.tool_calls == ()


def test_cancel_while_the_server_keeps_sending_stops_between_events():
    token = Cancel()
    # Set by the reading thread after the first event: the client's check after that event stops it.
    first = lambda e: token.set() if isinstance(e, TextDelta) else None  # noqa: E731

    def stream() -> Iterator[bytes]:
        yield from forever(b"data: " + json.dumps(_chunk({"content": "tick "})).encode() + b"\n\n")

    with FakeServer([Reply(stream=stream, delay=0.01)]) as srv:
        with pytest.raises(Cancelled) as info:
            complete(srv, emit=first, cancel=token)
    assert info.value.partial.text.startswith("tick ")


def test_a_token_set_before_the_request_sends_nothing():
    token = Cancel()
    token.set()
    with FakeServer([Reply(events=text_events("never"))]) as srv:
        with pytest.raises(Cancelled):
            complete(srv, cancel=token)
        assert srv.requests == []


def test_cancel_during_a_retry_wait_ends_the_wait():
    token = Cancel()

    def busy(body: dict) -> Reply:
        token.set()  # as the request arrives: the 30 s retry wait that follows must end at once
        return error(503, "busy", {"Retry-After": "30"})

    with FakeServer([busy]) as srv:
        start = time.monotonic()
        with pytest.raises(Cancelled):
            complete(srv, cancel=token, max_backoff=30)
        assert time.monotonic() - start < 5
        assert len(srv.requests) == 1
