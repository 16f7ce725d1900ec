"""A scripted OpenAI-compatible server on 127.0.0.1: real HTTP, real SSE, recorded requests.

Each request takes the next scripted reply. A reply is a `Reply` (or a callable that
receives the request body and returns one). Streams are sent with chunked transfer
encoding; `split` cuts the SSE bytes into pieces of that many bytes, each flushed
separately (optionally after `delay` seconds), so clients see awkward boundaries.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    # SSE events: dicts become `data: <json>`, strings are sent as given (comments, raw lines).
    events: list[Any] | None = None
    body: bytes | None = None  # a plain (non-SSE) body
    done: bool = True  # send `data: [DONE]` after the events
    split: int | None = None
    delay: float = 0.0
    hang_after: bool = False  # keep the connection open after the events until the server stops
    # Raw SSE bytes produced on the fly (endless or huge streams), sent instead of `events`, each
    # piece flushed as it comes (after `delay`); it stops when the client hangs up or the server stops.
    stream: Callable[[], Iterable[bytes]] | None = None

    def stream_bytes(self) -> bytes:
        out = []
        for ev in self.events or []:
            out.append(ev if isinstance(ev, str) else f"data: {json.dumps(ev)}\n\n")
        if self.done:
            out.append("data: [DONE]\n\n")
        return "".join(out).encode()


# ---- chunk builders, shaped like the chunks real servers send -------------------------------

def _chunk(delta: dict | None, finish: str | None = None, usage: dict | None = None) -> dict:
    c: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake"}
    c["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    if usage is not None:
        c["usage"] = usage
    return c


def usage_chunk(prompt: int = 100, completion: int = 10) -> dict:
    return _chunk(None, usage={"prompt_tokens": prompt, "completion_tokens": completion,
                               "total_tokens": prompt + completion})


def text_events(text: str, finish: str | None = "stop", usage: tuple[int, int] | None = (100, 10)) -> list:
    """A plain answer, streamed a few characters at a time."""
    events: list[Any] = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": text[i:i + 7]}) for i in range(0, len(text), 7)]
    events.append(_chunk({}, finish))
    if usage:
        events.append(usage_chunk(*usage))
    return events


def tool_events(calls: Iterable[tuple[str, Any]] | tuple[str, Any], text: str = "",
                finish: str | None = "tool_calls", usage: tuple[int, int] | None = (100, 10),
                ids: list[str] | None = None) -> list:
    """Tool calls in the OpenAI fragment style: id and name first, then the arguments in pieces.

    `calls` holds (name, arguments) pairs; arguments given as a str are sent verbatim (broken JSON).
    """
    if isinstance(calls, tuple):
        calls = [calls]
    events: list[Any] = [_chunk({"role": "assistant", "content": ""})]
    if text:
        events.append(_chunk({"content": text}))
    for i, (name, args) in enumerate(calls):
        raw = args if isinstance(args, str) else json.dumps(args)
        call_id = ids[i] if ids else f"call_{i}_{name}"
        events.append(_chunk({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                              "function": {"name": name, "arguments": ""}}]}))
        step = max(1, len(raw) // 3)
        for k in range(0, len(raw), step):
            events.append(_chunk({"tool_calls": [{"index": i, "function": {"arguments": raw[k:k + step]}}]}))
    events.append(_chunk({}, finish))
    if usage:
        events.append(usage_chunk(*usage))
    return events


def text(answer: str, **kw: Any) -> Reply:
    return Reply(events=text_events(answer), **kw)


def tools(*calls: tuple[str, Any], **kw: Any) -> Reply:
    return Reply(events=tool_events(list(calls)), **kw)


def empty_stream() -> Reply:
    """200 with SSE headers and an empty body: llama-cpp-python's answer to a streamed request with tools."""
    return Reply(events=[], done=False)


def completion(content: str | None = None, calls: Iterable[tuple[str, Any]] = (), finish: str | None = None,
               usage: tuple[int, int] | None = (100, 10)) -> Reply:
    """A non-streamed JSON reply (`stream: false`), shaped like llama-cpp-python's (content null with calls)."""
    tool_calls = [{"id": f"call_{i}_{name}", "type": "function",
                   "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                  for i, (name, args) in enumerate(calls)]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                            "choices": [{"index": 0, "message": message,
                                         "finish_reason": finish or ("tool_calls" if tool_calls else "stop")}]}
    if usage:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Reply(body=json.dumps(body).encode())


def user_texts(request: dict) -> list[str]:
    """The user messages of a request the server received."""
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
    return Reply(status=status, body=body, headers={"Content-Type": "application/json", **(headers or {})})


# ---- the server --------------------------------------------------------------------------------

Script = Reply | Callable[[dict], Reply]


class Serving:
    """An HTTP server on 127.0.0.1 in a daemon thread (the fake servers' plumbing). `stop` is set before
    it shuts down, so a reply that waits (a delay, a hang) ends with it."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.stop = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


class FakeServer:
    """Use as a context manager; `url` is the base URL to give `loop` (…/v1)."""

    def __init__(self, script: Iterable[Script] = (), models: list[str | dict] | Reply | None = None,
                 props: dict | Reply | None = None, routes: dict[str, Any] | None = None,
                 respond: Callable[[dict], Reply] | None = None):
        self.script: list[Script] = list(script)
        # Answers every chat request when set (the script is then unused): a reply chosen from the
        # request itself, e.g. per task prompt when several runs share the server (tests/test_eval_*.py).
        self.respond = respond
        # Other paths a client may ask (GET or POST), e.g. "/api/v0/models", "/api/show": a body as JSON,
        # a Reply as given; POSTs to them are recorded in `posts` as (path, body).
        self.routes: dict[str, Any] = dict(routes or {})
        self.posts: list[tuple[str, Any]] = []
        # GET /v1/models answers these ids (a dict is sent as the entry itself), GET /props this body;
        # a Reply is sent as given (a 401); None: 404, as from a server without the endpoint.
        self.models, self.props = models, props
        self.gets: list[str] = []  # the paths of GET requests, in order
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._serving = Serving(self._handler())
        self._stop = self._serving.stop

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._serving.port}/v1"

    def add(self, *replies: Script) -> None:
        with self._lock:
            self.script.extend(replies)

    def __enter__(self) -> FakeServer:
        self._serving.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._serving.close()

    def _next(self, body: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.respond is not None:
                item: Script = self.respond
            elif not self.script:
                return error(500, "fake server: no scripted reply left")
            else:
                item = self.script.pop(0)
        return item(body) if callable(item) else item

    def _handler(server) -> type[BaseHTTPRequestHandler]:  # noqa: N805 - closes over the server
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0].rstrip("/")
                server.gets.append(path)
                answer = {"/v1/models": server.models, "/props": server.props, **server.routes}.get(path)
                if isinstance(answer, Reply):
                    self._send_plain(answer.status, answer.body or b"", answer.headers)
                elif answer is None:
                    self._send_plain(404, b'{"error": {"message": "not found"}}')
                elif path == "/v1/models":
                    data = [m if isinstance(m, dict) else {"id": m, "object": "model", "owned_by": "fake"}
                            for m in answer]
                    self._send_plain(200, json.dumps({"object": "list", "data": data}).encode())
                else:
                    self._send_plain(200, json.dumps(answer).encode())

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                server.headers.append(dict(self.headers))
                if self.path.split("?", 1)[0].rstrip("/") in server.routes:
                    path = self.path.split("?", 1)[0].rstrip("/")
                    server.posts.append((path, body))
                    answer = server.routes[path]
                    if isinstance(answer, Reply):
                        self._send_plain(answer.status, answer.body or b"", answer.headers)
                    else:
                        self._send_plain(200, json.dumps(answer).encode())
                    return
                if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
                    self._send_plain(404, b'{"error": {"message": "not found"}}')
                    return
                reply = server._next(body)
                if reply.events is None and reply.stream is None:
                    self._send_plain(reply.status, reply.body or b"", reply.headers)
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    for piece in self._pieces(reply):
                        if server._stop.is_set() or reply.delay and server._stop.wait(reply.delay):
                            return
                        if piece:  # an empty chunk would end the chunked body
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                            self.wfile.flush()
                    if reply.hang_after:
                        server._stop.wait(60)
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def _pieces(self, reply: Reply) -> Iterable[bytes]:
                if reply.stream is not None:
                    return reply.stream()
                data = reply.stream_bytes()
                step = reply.split or len(data) or 1
                return (data[i:i + step] for i in range(0, len(data), step))

            def _send_plain(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                headers = {"Content-Type": "application/json", **(headers or {})}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

        return Handler
