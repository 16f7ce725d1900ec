"""Streamed Markdown cut into blocks: paragraphs and (chunks of) fenced code.

The renderer prints each finished block once and keeps only the open one live, so the cost
of showing an answer is linear in its length, however long it grows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
CODE_CHUNK = 40  # an open code block is printed in chunks of this many lines
MD_MAX = 30  # a paragraph that grows past this many lines is cut (keeps the live area small)


@dataclass
class Block:
    """A finished piece of Markdown: a paragraph-level chunk, or (part of) a fenced code block."""

    kind: str  # "md" | "code"
    text: str
    lang: str = ""
    first: bool = True  # the first chunk of its code block


class BlockSplitter:
    """Cuts streamed Markdown into finished blocks. Work per delta is proportional to the delta."""

    def __init__(self) -> None:
        self.partial = ""
        self.lines: list[str] = []
        self.fence = ""
        self.lang = ""
        self.chunked = False

    def feed(self, text: str) -> list[Block]:
        self.partial += text
        if "\n" not in text:
            return []
        *complete, self.partial = self.partial.split("\n")
        out: list[Block] = []
        for line in complete:
            out += self._line(line)
        return out

    def finish(self) -> list[Block]:
        """Everything still open, as finished blocks."""
        out = self._line(self.partial) if self.partial else []
        self.partial = ""
        return out + (self._code() if self.fence else self._md())

    def open_block(self) -> Block | None:
        lines = [*self.lines, self.partial] if self.partial else self.lines
        if not lines:
            return None
        if self.fence:
            return Block("code", "\n".join(lines), self.lang, not self.chunked)
        return Block("md", "\n".join(lines))

    def _line(self, line: str) -> list[Block]:
        if self.fence:
            bare = line.strip()
            if bare and set(bare) == {self.fence[0]} and len(bare) >= len(self.fence):
                return self._code()
            self.lines.append(line)
            return self._code(closing=False) if len(self.lines) >= CODE_CHUNK else []
        opening = FENCE.match(line)
        if opening:
            out = self._md()
            self.fence, self.lang, self.chunked = opening.group(1), opening.group(2), False
            return out
        if not line.strip():
            return self._md()
        self.lines.append(line)
        return self._md() if len(self.lines) >= MD_MAX else []

    def _md(self) -> list[Block]:
        if not self.lines:
            return []
        block, self.lines = Block("md", "\n".join(self.lines)), []
        return [block]

    def _code(self, closing: bool = True) -> list[Block]:
        block = Block("code", "\n".join(self.lines), self.lang, not self.chunked)
        self.lines, self.chunked = [], not closing
        if closing:
            self.fence = ""
        return [block] if block.text else []
