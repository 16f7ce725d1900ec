"""A scripted Ollama server on 127.0.0.1: real HTTP, /api/chat streamed as JSON lines, recorded requests.

Each POST /api/chat takes the next scripted reply (an `OllamaReply`, or a callable that receives the
request body and returns one). Lines go out with chunked transfer encoding, cut every `split` bytes,
as Ollama's Go server flushes them. POST /api/show answers with `show` (404 when None), GET /api/tags
lists `models`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakeserver import Serving

STAMP = "2026-12-01T12:00:00.000000Z"


@dataclass
class OllamaReply:
    status: int = 200
    lines: list[Any] | None = None  # dicts become one JSON line each; strings are sent as given
    body: bytes | None = None  # a plain body (errors, stream: false)
    content_type: str = "application/x-ndjson"
    split: int | None = None
    hang_after: bool = False  # keep the connection open after the lines until the server stops

    def stream_bytes(self) -> bytes:
        return "".join(x if isinstance(x, str) else json.dumps(x) + "\n" for x in self.lines or []).encode()


def _obj(message: dict | None, done: bool = False, **extra: Any) -> dict:
    obj: dict[str, Any] = {"model": "fake", "created_at": STAMP}
    if message is not None:
        obj["message"] = {"role": "assistant", "content": "", **message}
    obj["done"] = done
    obj.update(extra)
    return obj


def final(done_reason: str = "stop", usage: tuple[int, int] | None = (120, 12)) -> dict:
    """The last object of a reply: the finish and the token counts."""
    counts = {"prompt_eval_count": usage[0], "eval_count": usage[1]} if usage else {}
    return _obj({"content": ""}, True, done_reason=done_reason, total_duration=1, **counts)


def text_lines(answer: str, done_reason: str = "stop", usage: tuple[int, int] | None = (120, 12),
               thinking: str = "") -> list[dict]:
    """A plain answer, a few characters per line, as Ollama streams it."""
    lines = [_obj({"content": "", "thinking": thinking})] if thinking else []
    lines += [_obj({"content": answer[i:i + 5]}) for i in range(0, len(answer), 5)]
    return [*lines, final(done_reason, usage)]


def tool_lines(*calls: tuple[str, Any], text: str = "", usage: tuple[int, int] | None = (120, 12),
               done_reason: str = "stop") -> list[dict]:
    """Whole tool calls in one object (Ollama's way), with arguments as objects and no ids."""
    lines = [_obj({"content": text})] if text else []
    lines.append(_obj({"tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in calls]}))
    return [*lines, final(done_reason, usage)]  # Ollama says "stop" even after tool calls


def text(answer: str, **kw: Any) -> OllamaReply:
    return OllamaReply(lines=text_lines(answer, **kw))


def tools(*calls: tuple[str, Any], **kw: Any) -> OllamaReply:
    return OllamaReply(lines=tool_lines(*calls, **kw))


def error(status: int, message: str) -> OllamaReply:
    """Ollama's error shape: {"error": "..."} (a string, not an object)."""
    return OllamaReply(status=status, body=json.dumps({"error": message}).encode(),
                       content_type="application/json; charset=utf-8")


Script = OllamaReply | Callable[[dict], OllamaReply]


@dataclass
class FakeOllama:
    """Use as a context manager; `url` is Ollama's root URL (give it to `loop --base-url`)."""

    script: list[Script] = field(default_factory=list)
    show: dict | None = None  # the /api/show answer; None: 404 as for a model Ollama does not have
    models: list[str] = field(default_factory=lambda: ["fake"])

    def __post_init__(self) -> None:
        self.requests: list[dict] = []  # /api/chat bodies
        self.paths: list[str] = []  # every request, as "METHOD /path"
        self._lock = threading.Lock()
        self._serving = Serving(_handler(self))
        self._stop = self._serving.stop

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._serving.port}"

    def add(self, *replies: Script) -> None:
        with self._lock:
            self.script.extend(replies)

    def __enter__(self) -> FakeOllama:
        self._serving.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._serving.close()

    def next_reply(self, body: dict) -> OllamaReply:
        with self._lock:
            self.requests.append(body)
            if not self.script:
                return error(500, "fake ollama: no scripted reply left")
            item = self.script.pop(0)
        return item(body) if callable(item) else item


def _handler(server: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            server.paths.append(f"GET {self.path}")
            if self.path.rstrip("/") == "/api/tags":
                self._plain(200, {"models": [{"name": m, "model": m} for m in server.models]})
            else:
                self._plain(404, b"404 page not found", "text/plain")

        def do_POST(self) -> None:  # noqa: N802
            server.paths.append(f"POST {self.path}")
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"_raw": raw.decode(errors="replace")}
            path = self.path.split("?", 1)[0].rstrip("/")
            if path == "/api/show":
                if server.show is None:
                    self._plain(404, {"error": f"model '{body.get('model')}' not found"})
                else:
                    self._plain(200, server.show)
                return
            if path != "/api/chat":
                self._plain(404, b"404 page not found", "text/plain")
                return
            reply = server.next_reply(body)
            if reply.lines is None:
                self._plain(reply.status, reply.body or b"", reply.content_type)
                return
            self._stream(reply)

        def _stream(self, reply: OllamaReply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            data = reply.stream_bytes()
            step = reply.split or len(data) or 1
            try:
                for i in range(0, len(data), step):
                    if server._stop.is_set():
                        return
                    piece = data[i:i + step]
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

        def _plain(self, status: int, body: bytes | dict, kind: str = "application/json; charset=utf-8") -> None:
            data = json.dumps(body).encode() if isinstance(body, dict) else body
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

    return Handler

