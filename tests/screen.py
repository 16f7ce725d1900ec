"""A small terminal screen for tests: the control codes loop's live area and Rich use, and a resize
that rewraps (reflows) lines as tmux, VTE and kitty do. pyte is not a dependency; this is enough
to see what a person would see after a stream, a resize and a redraw."""

from __future__ import annotations

import re

CONTROL = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])|\x1b[()][0-9A-Za-z]|\x1b[78=>]|[\r\n\x07\x08]")


class Screen:
    """Rows of text with a cursor; a row that ran past the width is marked as continuing on the next."""

    def __init__(self, width: int):
        self.width = width
        self.rows: list[list[str]] = [[]]
        self.wrapped: list[bool] = [False]  # row i continues on row i+1 (a soft wrap)
        self.row = 0
        self.col = 0

    def feed(self, data: str) -> None:
        pos = 0
        for m in CONTROL.finditer(data):
            self._text(data[pos:m.start()])
            self._control(m)
            pos = m.end()
        self._text(data[pos:])

    def _ensure(self, row: int) -> None:
        while len(self.rows) <= row:
            self.rows.append([])
            self.wrapped.append(False)

    def _text(self, text: str) -> None:
        for ch in text:
            if self.col >= self.width:  # pending wrap: the next character starts the next row
                self.wrapped[self.row] = True
                self.row += 1
                self.col = 0
                self._ensure(self.row)
            cells = self.rows[self.row]
            cells.extend(" " * (self.col - len(cells)))
            if self.col < len(cells):
                cells[self.col] = ch
            else:
                cells.append(ch)
            self.col += 1

    def _control(self, m: re.Match) -> None:
        token = m.group(0)
        if token == "\r":
            self.col = 0
        elif token == "\n":
            self.row += 1
            self._ensure(self.row)
        elif token == "\x08":
            self.col = max(0, self.col - 1)
        elif m.group(2):
            args, op = m.group(1), m.group(2)
            n = int(args) if args.isdigit() else 1
            if op == "A":
                self.row = max(0, self.row - n)
                self.col = min(self.col, self.width - 1)
            elif op == "B":
                self.row += n
                self._ensure(self.row)
            elif op == "C":
                self.col = min(self.col + n, self.width - 1)
            elif op == "D":
                self.col = max(0, self.col - n)
            elif op == "G":
                self.col = n - 1
            elif op == "J" and args in ("", "0"):
                del self.rows[self.row][self.col:]
                del self.rows[self.row + 1:]
                del self.wrapped[self.row + 1:]
                self.wrapped[self.row] = False
            elif op == "K" and args in ("", "0"):
                del self.rows[self.row][self.col:]
            elif op == "K" and args == "2":
                self.rows[self.row] = []

    def resize(self, width: int) -> None:
        """Rewrap every line to `width`; the cursor stays on the character it was on."""
        lines: list[list[str]] = []
        cursor = (0, 0)
        current: list[str] = []
        for i, cells in enumerate(self.rows):
            if i == self.row:
                cursor = (len(lines), len(current) + self.col)
            current = current + cells if not self.wrapped[i] else current + cells + [" "] * (self.width - len(cells))
            if not self.wrapped[i]:
                lines.append(current)
                current = []
        if current:
            lines.append(current)
        self.width, self.rows, self.wrapped = width, [], []
        for n, line in enumerate(lines):
            while line and line[-1] == " " and n != cursor[0]:
                line = line[:-1]
            pieces = [line[i:i + width] for i in range(0, max(len(line), 1), width)] or [[]]
            if n == cursor[0]:
                self.row = len(self.rows) + min(cursor[1] // width, len(pieces) - 1)
                self.col = cursor[1] - (self.row - len(self.rows)) * width
            for k, piece in enumerate(pieces):
                self.rows.append(list(piece))
                self.wrapped.append(k < len(pieces) - 1)
        self._ensure(self.row)

    def lines(self) -> list[str]:
        """The logical lines on the screen (soft-wrapped rows joined), trailing blanks removed."""
        out, current = [], ""
        for cells, wrapped in zip(self.rows, self.wrapped, strict=True):
            current += "".join(cells)
            if not wrapped:
                out.append(current.rstrip())
                current = ""
        if current:
            out.append(current.rstrip())
        while out and not out[-1]:
            out.pop()
        return out
