"""The fallback over a connection that a real server left broken (seen with llama-cpp-python 0.3.36).

After failing inside its event publisher the server ends the empty chunked body cleanly and keeps
the connection open, then drops the next request sent on it ("Server disconnected without
sending a response"). The fallback request must go out on a fresh connection.
"""

from __future__ import annotations

import json
import socket
import threading

from loopagent.cancel import Cancel
from loopagent.client.openai import OpenAIClient
from loopagent.events import Notice
from loopagent.messages import UserMessage

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
REPLY = json.dumps({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
    "role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]}}]})


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return b""
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next((line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0))
    while len(body) < length:
        body += conn.recv(65536)
    return body


def answer(conn: socket.socket, first: bool, bodies: list[dict]) -> None:
    with conn:
        conn.settimeout(10)
        try:
            bodies.append(json.loads(read_request(conn)))
            if first:  # the empty stream, on a connection that stays open and drops what comes next
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                if read_request(conn):
                    bodies.append({"dropped": True})
                return
            payload = REPLY.encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nConnection: close\r\n"
                         b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        except OSError:
            pass


def serve(listener: socket.socket, bodies: list[dict], workers: list[threading.Thread]) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        worker = threading.Thread(target=answer, args=(conn, not workers, bodies), daemon=True)
        workers.append(worker)
        worker.start()


def test_the_fallback_request_does_not_reuse_the_connection_the_empty_stream_came_on():
    listener = socket.create_server(("127.0.0.1", 0))
    bodies: list[dict] = []
    workers: list[threading.Thread] = []
    thread = threading.Thread(target=serve, args=(listener, bodies, workers), daemon=True)
    thread.start()
    client = OpenAIClient(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1", model="m",
                          retries=0, read_timeout=10, connect_timeout=5)
    events: list = []
    try:
        reply = client.complete([UserMessage("hi")], TOOLS, events.append, Cancel())
    finally:
        client.close()
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=10)
        for worker in workers:
            worker.join(timeout=10)
    assert [c.name for c in reply.tool_calls] == ["read_file"]
    assert [b.get("stream") for b in bodies] == [True, False]
    assert [e.kind for e in events if isinstance(e, Notice)] == ["fallback"]
