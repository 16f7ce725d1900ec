"""A server-sent-events decoder with bounded memory. Pure: bytes in, event payloads out.

httpx's line decoder keeps an unterminated line whole, however long it grows (a server that
sent one 300 MB line with no newline took over 1 GB of memory), so the stream is split here.
"""

from __future__ import annotations

import re

MAX_LINE_BYTES = 16 * 1024 * 1024  # one SSE line, and the data of one event
LINE_END = re.compile(rb"\r\n|\r|\n")  # all three end a line (WHATWG event-stream rules)


class LineTooLong(Exception):
    """A line (or the data of one event) passed the limit before it ended."""


class SSEDecoder:
    """Feed raw chunks; get back the `data` of every event they complete. Comments are counted, not kept."""

    def __init__(self, max_bytes: int = MAX_LINE_BYTES):
        self.max_bytes = max_bytes
        self.buf = bytearray()
        self.data: list[str] = []
        self.size = 0
        self.comments = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The payloads of the events completed by `chunk`; LineTooLong past the limit."""
        # Only the new bytes are searched: what is left in the buffer holds no line end, except
        # perhaps a final \r that may be the first half of a \r\n split across chunks.
        start = len(self.buf) - (1 if self.buf.endswith(b"\r") else 0)
        self.buf += chunk
        events: list[str] = []
        pos = 0
        for m in LINE_END.finditer(self.buf, start):
            if m.group() == b"\r" and m.end() == len(self.buf):
                break
            self._line(bytes(self.buf[pos : m.start()]), events)
            pos = m.end()
        del self.buf[:pos]
        if len(self.buf) > self.max_bytes:
            raise LineTooLong(f"an event-stream line passed {size(self.max_bytes)} without ending")
        return events

    def close(self) -> list[str]:
        """The events left at the end of the stream (a last line without its newline is still read)."""
        events: list[str] = []
        if self.buf:
            self._line(bytes(self.buf.rstrip(b"\r")), events)
            self.buf.clear()
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[str]) -> None:
        if not line:  # a blank line dispatches the event
            if self.data:
                events.append("\n".join(self.data))
            self.data, self.size = [], 0
            return
        if line.startswith(b":"):  # `: ping`, `: keep-alive`
            self.comments += 1
            return
        name, _, value = line.partition(b":")
        if name != b"data":  # event, id, retry: chat-completions servers put everything in data
            return
        value = value[1:] if value.startswith(b" ") else value
        self.size += len(value) + 1
        if self.size > self.max_bytes:
            raise LineTooLong(f"one event's data passed {size(self.max_bytes)}")
        # Splitting bytes at \r or \n cannot cut a UTF-8 sequence, so each line decodes alone.
        self.data.append(value.decode("utf-8", errors="replace"))


def size(n: int) -> str:
    """A byte count for a message: "16 MB", "4096 bytes"."""
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n} bytes"
