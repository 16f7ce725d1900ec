"""LSP's Content-Length framing, both ways, and what a server that does not speak it gets."""

from __future__ import annotations

import io

import pytest

from loopagent.lsp.framing import MAX_BODY_BYTES, FramingError, encode, read_message


def stream(*parts: bytes) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(b"".join(parts)))


def test_a_message_goes_and_comes_back_with_its_byte_length_not_its_character_count():
    message = {"jsonrpc": "2.0", "method": "x", "params": {"text": "naïve ☃ 🐍"}}
    wire = encode(message)
    head, body = wire.split(b"\r\n\r\n", 1)
    assert head == b"Content-Length: %d" % len(body)
    assert len(body) > len(body.decode("utf-8"))  # bytes, not characters
    s = stream(wire, wire)
    assert read_message(s) == message and read_message(s) == message and read_message(s) is None


def test_other_headers_any_case_and_a_bare_newline_are_read():
    body = b'{"id":1,"result":null}'
    s = stream(b"content-length: %d\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body), body)
    assert read_message(s) == {"id": 1, "result": None}


@pytest.mark.parametrize("wire, problem", [
    (b"hello world\r\n\r\n", "not a header"),
    (b"Content-Type: x\r\n\r\n{}", "without Content-Length"),
    (b"Content-Length: x\r\n\r\nhi", "unusable Content-Length"),
    (b"Content-Length: -1\r\n\r\n", "unusable Content-Length"),
    (b"Content-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1), "unusable Content-Length"),
    (b"Content-Length: 10\r\n\r\n{}", "ended inside a message"),
    (b"Content-Length: 5\r\n\r\nhello", "not JSON"),
    (b"Content-Length: 2\r\n\r\n[]", "not a JSON object"),
    (b"Content-Length: 2\r\n", "ended inside a header"),
    (b"X: " + b"y" * 5000 + b"\r\n\r\n", "longer than"),
    (b"X: y\r\n" * 40 + b"\r\n", "header lines"),
])
def test_garbage_is_a_framing_error_never_a_crash_or_an_unbounded_read(wire, problem):
    with pytest.raises(FramingError, match=problem):
        read_message(stream(wire))
