"""LSP's base protocol: JSON-RPC messages framed by a `Content-Length` header, over a byte stream.

The other end is a program we did not write and that may print anything: a frame that is not
what the protocol says is a FramingError, never a crash or an unbounded read.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

MAX_HEADER_LINES = 16
MAX_HEADER_BYTES = 1024  # one header line
MAX_BODY_BYTES = 64 << 20  # a diagnostics list of a huge file fits many times over


class FramingError(Exception):
    """The stream is not LSP: a line that is not a header, a missing or absurd length, a body not JSON."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as the wire carries it."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    """The next message on `stream` (blocking); None at the end of the stream."""
    length = None
    for count in range(MAX_HEADER_LINES + 1):
        line = stream.readline(MAX_HEADER_BYTES)
        if not line:
            if count == 0:
                return None
            raise FramingError("the stream ended inside a header")
        if line in (b"\r\n", b"\n"):
            if count == 0:
                continue  # tolerated: a blank line between messages
            break
        if not line.endswith(b"\n"):
            raise FramingError(f"a header line longer than {MAX_HEADER_BYTES} bytes")
        name, sep, value = line.decode("ascii", errors="replace").partition(":")
        if not sep:
            raise FramingError(f"not a header: {line[:60]!r}")
        if name.strip().lower() == "content-length":
            length = parse_length(value.strip())
    else:
        raise FramingError(f"more than {MAX_HEADER_LINES} header lines")
    if length is None:
        raise FramingError("a message without Content-Length")
    body = stream.read(length)
    if len(body) < length:
        raise FramingError("the stream ended inside a message")
    try:
        message = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FramingError(f"a body that is not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise FramingError("a body that is not a JSON object")
    return message


def parse_length(value: str) -> int:
    if not value.isdigit() or int(value) > MAX_BODY_BYTES:
        raise FramingError(f"an unusable Content-Length: {value[:30]!r}")
    return int(value)
