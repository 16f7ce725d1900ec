"""Real servers' bytes through the real client: every capture in tests/streams/ replayed over HTTP.

The captures come from llama-cpp-python's server (see tests/streams/README.md). A local server
here sends each body byte for byte, HTTP chunk by HTTP chunk as it was captured, with the
captured status and headers; `OpenAIClient` reads it as it would read the real server.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.client import IncompleteTurn
from loopagent.client.openai import OpenAIClient
from loopagent.events import Event, Notice, TextDelta
from loopagent.messages import AssistantMessage, ToolCall, UserMessage
from loopagent.servers import ServerBook

STREAMS = Path(__file__).resolve().parent.parent / "streams"
PING = re.compile(rb": ping - [^\n]*\n\n")


@dataclass
class Capture:
    name: str
    meta: dict
    body: bytes

    @classmethod
    def load(cls, name: str) -> Capture:
        meta = json.loads((STREAMS / f"{name}.meta.json").read_text(encoding="utf-8"))
        return cls(name, meta, (STREAMS / meta["body_file"]).read_bytes())

    def pieces(self) -> list[tuple[bytes, float]]:
        """The body cut where the server's HTTP chunks ended, each with its arrival time."""
        out, pos = [], 0
        for chunk in self.meta["chunks"] or []:
            out.append((self.body[pos:pos + chunk["size"]], chunk["t"]))
            pos += chunk["size"]
        assert pos == len(self.body) or self.meta["chunks"] is None, "metadata and body disagree"
        return out

    def tools(self) -> list[dict]:
        return self.meta["request"].get("tools") or []


class Replay:
    """A server on 127.0.0.1 that answers every POST with one capture, verbatim.

    With `lockstep`, it sends the next HTTP chunk only after the client has read the last one
    and asked `clock()`, which answers with the time that chunk arrived from the real server:
    the client's idle deadline sees the captured timing without the test waiting for it.
    """

    def __init__(self, capture: Capture, pieces: list[tuple[bytes, float]] | None = None,
                 lockstep: bool = False, then: list[Capture] = ()):
        self.capture, self.lockstep = capture, lockstep
        self.then = list(then)  # the captures later requests get, in turn (the last one stays)
        self.chunked = capture.meta["chunks"] is not None
        self.send = capture.pieces() if pieces is None else pieces
        self.requests: list[dict] = []
        self.now = 0.0
        self.tick, self.stop = threading.Event(), threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        # A short poll: shutdown() waits for it, twice per test.
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Replay:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.tick.set()  # a handler waiting for the client gives up
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def clock(self) -> float:
        """The client's clock: when the chunk it just read arrived in the capture."""
        now = self.now
        self.tick.set()
        return now

    def _await_client(self) -> bool:
        """False when the test is over (or the client never came back)."""
        if not self.lockstep:
            return not self.stop.is_set()
        ok = self.tick.wait(timeout=10)
        self.tick.clear()
        return ok and not self.stop.is_set()

    def _write(self, wfile) -> None:  # noqa: ANN001 - the handler's socket file
        meta = self.capture.meta
        head = [f"HTTP/1.1 {meta['status']} OK"] + [f"{k}: {v}" for k, v in meta["headers"]]
        wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        wfile.flush()
        if not self.chunked:
            wfile.write(self.capture.body)
            wfile.flush()
            return
        if not self._await_client():  # the client starts its idle clock once the headers are in
            return
        for piece, when in self.send:
            self.now = when
            wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            wfile.flush()
            if not self._await_client():
                return
        wfile.write(b"0\r\n\r\n")
        wfile.flush()

    def _handler(replay) -> type[BaseHTTPRequestHandler]:  # noqa: N805 - closes over the replay
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                replay.requests.append(json.loads(raw))
                if len(replay.requests) > 1 and replay.then:
                    replay.capture = replay.then.pop(0) if len(replay.then) > 1 else replay.then[0]
                    replay.chunked = replay.capture.meta["chunks"] is not None
                    replay.send = replay.capture.pieces()
                try:
                    replay._write(self.wfile)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up: it is allowed to
                self.close_connection = True

        return Handler


@dataclass
class Outcome:
    message: AssistantMessage | None
    error: IncompleteTurn | None
    events: list[Event]
    requests: int
    sleeps: list[float]


def replay(name: str, pieces: list[tuple[bytes, float]] | None = None, lockstep: bool = False,
           **client: object) -> Outcome:
    """Run one `complete` of the real client against the capture; what it returned or raised."""
    capture = Capture.load(name)
    events: list[Event] = []
    sleeps: list[float] = []
    with Replay(capture, pieces, lockstep) as srv:
        extra = {"clock": srv.clock} if lockstep else {}
        cli = OpenAIClient(base_url=srv.url, model="gemma3-270m", sleep=sleeps.append, **extra, **client)
        try:
            msg, err = cli.complete([UserMessage("hi")], capture.tools(), events.append, Cancel()), None
        except IncompleteTurn as exc:
            msg, err = None, exc
        finally:
            cli.close()
        return Outcome(msg, err, events, len(srv.requests), sleeps)


def texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


def test_streamed_text_turn():
    out = replay("llamacpp_text")
    assert out.error is None and out.message is not None
    assert texts(out.events) == ["Say", " hello", " in", " one", " short", " sentence", "."]
    assert out.message.text == "Say hello in one short sentence."
    assert out.message.tool_calls == () and out.message.stop_reason == "stop"
    # llama-cpp-python ignores stream_options.include_usage: the stream has no usage chunk.
    assert b'"usage"' not in Capture.load("llamacpp_text").body and out.message.usage is None
    assert out.requests == 1


def test_empty_200_event_stream_without_tools_is_one_incomplete_turn():
    # A prompt over n_ctx: the server fails after sending 200 and SSE headers, so the body is empty.
    # No tools in the request, so nothing to fall back from: one request, no retry, a clear message.
    name = "llamacpp_ctx_exceeded"
    capture = Capture.load(name)
    assert capture.meta["status"] == 200 and capture.body == b"" and capture.meta["chunks"] == []
    assert dict(capture.meta["headers"])["content-type"].startswith("text/event-stream")
    out = replay(name, retries=4)
    assert out.message is None and out.error is not None
    assert "ended without a finish reason" in str(out.error)
    assert out.requests == 1 and out.sleeps == []
    assert out.events == [] and out.error.partial is not None and out.error.partial.text == ""
    assert out.error.partial.tool_calls == ()


def test_empty_200_to_streamed_tools_falls_back_once_and_an_empty_retry_stops():
    # The server answers every request with the empty body: one fallback request, then the turn is
    # incomplete as before (never a retry storm), with one notice and no sleeps.
    capture = Capture.load("llamacpp_auto")
    assert capture.body == b"" and capture.meta["request"]["tools"]
    out = replay("llamacpp_auto", retries=4)
    assert out.message is None and out.error is not None
    assert "ended without a finish reason" in str(out.error) and "also when sent without streaming" in str(out.error)
    assert out.requests == 2 and out.sleeps == []
    assert [e.kind for e in out.events if isinstance(e, Notice)] == ["fallback"]


def test_empty_200_to_streamed_tools_is_answered_by_the_non_streamed_capture(tmp_path):
    # The real pair: the streamed `auto` request gets the empty body, the same request with
    # stream: false gets the server's real JSON reply with a tool call.
    auto, nostream = Capture.load("llamacpp_auto"), Capture.load("llamacpp_nostream_auto")
    book = ServerBook(tmp_path)
    with Replay(auto, then=[nostream]) as srv:
        events: list[Event] = []
        cli = OpenAIClient(base_url=srv.url, model="gemma3-270m", servers=book, sleep=lambda s: None)
        try:
            msg = cli.complete([UserMessage("hi")], auto.tools(), events.append, Cancel())
            again = cli.complete([UserMessage("hi"), msg], auto.tools(), events.append, Cancel())
        finally:
            cli.close()
        first, retry, later = srv.requests
    assert msg.tool_calls == (ToolCall("call__0_read_file_cmpl-c41e7db8-eb01-4c2c-a857-1f2beb7994bb", "read_file",
                                       '{"path": "file1.txt"}'),) == again.tool_calls
    assert msg.usage is not None and (msg.usage.prompt_tokens, msg.usage.completion_tokens) == (245, 9)
    assert first["stream"] is True and retry["stream"] is False and "stream_options" not in retry
    assert {k: v for k, v in retry.items() if k != "stream"} == {
        k: v for k, v in first.items() if k not in ("stream", "stream_options")}
    assert later["stream"] is False  # the same client does not ask twice
    notices = [e for e in events if isinstance(e, Notice)]
    assert [n.kind for n in notices] == ["fallback"] and "without streaming" in notices[0].text
    record = json.loads((tmp_path / "servers.json").read_text())["servers"]
    assert [r["stream_tools"] for r in record.values()] == [False]
    assert list(record) == [f"openai {srv.url} gemma3-270m"]


READ_CALL = ToolCall("call__0_read_file_cmpl-6417c67e-dfc4-49e8-b884-48bc2814c5ba", "read_file",
                     '{"path": "file1.txt"}')


def test_streamed_named_tool_choice_call():
    # Ten fragments, each repeating the id and full name next to a legacy `function_call` copy.
    out = replay("llamacpp_named")
    assert out.error is None and out.message is not None
    assert out.message.tool_calls == (READ_CALL,)
    assert json.loads(out.message.tool_calls[0].arguments) == {"path": "file1.txt"}
    assert out.message.text == "" and out.message.stop_reason == "tool_calls"
    assert out.message.usage is None and texts(out.events) == []  # `content: null` is no text
    assert out.requests == 1


@pytest.mark.parametrize(("name", "call_id"), [
    ("llamacpp_nostream", "call__0_read_file_cmpl-afb6594d-f38e-48ab-b996-51d2c9652f7c"),
    # The auto reply's legacy function_call names "read_file:"; tool_calls is what counts.
    ("llamacpp_nostream_auto", "call__0_read_file_cmpl-c41e7db8-eb01-4c2c-a857-1f2beb7994bb"),
])
def test_non_streamed_tool_reply(name, call_id):
    assert Capture.load(name).meta["chunks"] is None  # Content-Length, not chunked
    out = replay(name)
    assert out.error is None and out.message is not None
    assert out.message.tool_calls == (ToolCall(call_id, "read_file", '{"path": "file1.txt"}'),)
    assert out.message.text == "" and out.message.stop_reason == "tool_calls"
    assert out.message.usage is not None
    assert (out.message.usage.prompt_tokens, out.message.usage.completion_tokens) == (245, 9)
    assert out.requests == 1


LONG_TEXT = "<|im_start|>user\nHere is a long"  # the tiny model echoes its prompt until max_tokens


def test_ping_comments_during_a_long_prompt_are_ignored():
    capture = Capture.load("llamacpp_text_long_prompt")
    assert len(PING.findall(capture.body)) == 22  # one every 15 s of the 338 s of prompt processing
    out = replay("llamacpp_text_long_prompt")
    assert out.error is not None and 'finish_reason "length"' in str(out.error)  # max_tokens 12
    assert "".join(texts(out.events)) == LONG_TEXT == out.error.partial.text
    assert not any("ping" in t for t in texts(out.events))
    # The same stream with the comment events cut out reads exactly the same.
    stripped = [(PING.sub(b"", piece), t) for piece, t in capture.pieces()]
    bare = replay("llamacpp_text_long_prompt", pieces=[p for p in stripped if p[0]])
    assert bare.events == out.events and str(bare.error) == str(out.error)


@pytest.mark.parametrize("name", ["llamacpp_text", "llamacpp_named", "llamacpp_text_long_prompt"])
def test_every_byte_boundary_reads_the_same(name):
    capture = Capture.load(name)
    whole = replay(name)
    bytewise = replay(name, pieces=[(capture.body[i:i + 1], 0.0) for i in range(len(capture.body))])
    assert bytewise.message == whole.message and bytewise.events == whole.events
    assert str(bytewise.error) == str(whole.error)


def test_real_prompt_processing_outlasts_the_default_idle_deadline():
    # Today's behaviour, replayed on the captured clock: 338 s of `: ping` before the first token
    # (a 13.7k-token prompt on 2 cores) passes the default read_timeout of 300 s, and the idle
    # deadline, which keep-alives do not move, abandons a turn the server would have answered.
    out = replay("llamacpp_text_long_prompt", lockstep=True)
    assert out.error is not None and out.events == [] and out.error.partial.text == ""
    assert "no text, thinking or tool call for 300 s" in str(out.error)
    assert "20 keep-alive comments" in str(out.error)  # the ping at 300.075 s is the one that ends it
    assert out.requests == 1
    # With a deadline past the wait, the same timing reads through to the server's own ending.
    patient = replay("llamacpp_text_long_prompt", lockstep=True, read_timeout=340.0)
    assert patient.error is not None and 'finish_reason "length"' in str(patient.error)
    assert "".join(texts(patient.events)) == LONG_TEXT
