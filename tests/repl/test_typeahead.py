"""Keys typed while a turn runs (a real pty): Ctrl+D leaves when the turn ends, a slash command runs
then, text waits for the turn's end; every queued line is echoed. The keystrokes are placed with a
gate: the fake server streams the start of a reply, then waits for the test to release it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.fakeserver import Reply, text, text_events, tool_events, user_texts


class Gate:
    """Replies that stream their first events, then hold the rest until the test calls `open()`."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def reply(self, events: list, first: int = 3) -> Reply:
        data = Reply(events=events).stream_bytes()
        pieces = [p + b"\n\n" for p in data.split(b"\n\n") if p]

        def stream() -> Iterator[bytes]:
            yield from pieces[:first]
            if not self.event.wait(30):
                return  # the test failed before opening the gate: end the stream cut short
            yield from pieces[first:]

        return Reply(stream=stream)

    def open(self) -> None:
        self.event.set()


@pytest.fixture
def gate() -> Iterator[Gate]:
    g = Gate()
    yield g
    g.open()  # never leave a server thread waiting


def test_ctrl_d_typed_while_the_answer_streams_exits_when_the_turn_ends(term, server, gate):
    server.add(gate.reply(text_events("Working on it, more to come. " * 3)), text("never asked"))
    t = term()
    t.line("do it")
    t.expect("Working on it")
    t.child.sendcontrol("d")
    t.expect("queued: /exit")  # read during the turn, not lost
    gate.open()
    t.expect("done: completed")
    assert t.exit_code() == 0
    assert len(server.requests) == 1


@pytest.mark.parametrize("color", [False, True])
def test_ctrl_d_right_after_the_done_line_exits(term, server, color):
    server.add(text("Short."), text("never asked"))
    t = term(color=color)
    t.line("do it")
    t.expect("done: completed")
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
    assert len(server.requests) == 1


def test_slash_commands_typed_during_a_turn_run_when_it_ends_never_sent_to_the_model(term, server, gate):
    server.add(gate.reply(text_events("Thinking about it. " * 3)), text("never asked"))
    t = term()
    t.line("first task")
    t.expect("Thinking ab")
    t.line("/tokens")
    t.line("/exit")
    t.expect("queued: /tokens")
    t.expect("queued: /exit")
    gate.open()
    t.expect("done: completed")
    t.expect("queued, running: /tokens")
    out = t.expect("queued, running: /exit")
    assert "step" in out and "prompt" in out and "completion" in out  # the /tokens table ran
    assert t.exit_code() == 0
    assert len(server.requests) == 1
    assert user_texts(server.requests[0]) == ["first task"]


def test_text_typed_while_the_model_streams_waits_for_the_turn_end_and_is_echoed(term, server, gate, workspace):
    calls = tool_events(("read_file", {"path": "a.txt"}), text="Let me read it.")
    server.add(gate.reply(calls, first=2), text("It says hello."), text("yes noted"))
    t = term()
    t.line("read a.txt")
    t.expect("Let me read it.")
    t.line("y")
    t.expect("queued: y")
    gate.open()
    t.expect("done: completed")
    t.expect("queued, sending: y")
    t.expect("yes noted")
    t.expect("done: completed")
    # Not slipped in between the tool result and the next request of the same turn:
    assert server.requests[1]["messages"][-1]["role"] == "tool"
    assert user_texts(server.requests[1]) == ["read a.txt"]
    assert user_texts(server.requests[2]) == ["read a.txt", "y"]
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_text_typed_during_a_cancelled_turn_comes_back_in_the_prompt(term, server, gate):
    server.add(gate.reply(text_events("Slowly now. " * 5)), text("got it"))
    t = term()
    t.line("first")
    t.expect("Slowly now")
    t.line("second thought")
    t.expect("queued: second thought")
    t.child.sendintr()
    t.expect("done: aborted")
    t.prompt()
    t.line("")  # the queued line is back in the input: Enter sends it
    t.expect("done: completed")
    assert user_texts(server.requests[-1])[-1] == "second thought"
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
