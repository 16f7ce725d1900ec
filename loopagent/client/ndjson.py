"""A newline-delimited JSON decoder with bounded memory (Ollama streams this). Pure: bytes in, lines out.

Same limit and the same reason as the SSE decoder: a server that never sends a newline must not
make the client hold the whole body.
"""

from __future__ import annotations

from loopagent.client.sse import MAX_LINE_BYTES, LineTooLong, size


class LineDecoder:
    """Feed raw chunks; get back every complete, non-blank line they end (as text, without its newline)."""

    def __init__(self, max_bytes: int = MAX_LINE_BYTES):
        self.max_bytes = max_bytes
        self.buf = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        """The lines completed by `chunk`; LineTooLong once one passes the limit without ending."""
        start = len(self.buf)  # what is left in the buffer holds no newline: search only the new bytes
        self.buf += chunk
        lines: list[str] = []
        pos = 0
        while (end := self.buf.find(b"\n", max(start, pos))) >= 0:
            self._line(bytes(self.buf[pos:end]), lines)
            pos = end + 1
        del self.buf[:pos]
        if len(self.buf) > self.max_bytes:
            raise LineTooLong(f"a JSON line passed {size(self.max_bytes)} without ending")
        return lines

    def close(self) -> list[str]:
        """The last line, when the body ended without a newline."""
        lines: list[str] = []
        self._line(bytes(self.buf), lines)
        self.buf.clear()
        return lines

    @staticmethod
    def _line(raw: bytes, lines: list[str]) -> None:
        # A newline cannot fall inside a UTF-8 sequence (nor inside a JSON string), so each line decodes alone.
        text = raw.decode("utf-8", errors="replace").strip()
        if text:
            lines.append(text)
