"""Inline reasoning: `<think>…</think>` written into the answer's text by models whose server does not
split it out (Qwen, DeepSeek-R1 and others behind a plain chat template).

`ThinkSplitter` cuts streamed text into thinking and answer pieces as it arrives. A tag split across
deltas is held back until it is complete; an opening tag counts only at the start of a line (a tag
quoted inside a sentence stays text); a block never closed is thinking to the end of the turn.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """Streamed text in, (kind, text) pieces out, kind "thinking" or "text". Pure and incremental."""

    def __init__(self) -> None:
        self.pending = ""
        self.inside = False
        self.line_start = True  # only whitespace since the last newline of the text
        self.after_close = False  # whitespace right after `</think>` is dropped

    def feed(self, text: str) -> list[tuple[str, str]]:
        """The pieces `text` completes; a possible tag at its end waits for the next delta."""
        self.pending += text
        out: list[tuple[str, str]] = []
        while self.pending:
            piece = self._step()
            if piece is None:
                break
            if piece[1]:
                out.append(piece)
        return merge(out)

    def finish(self) -> list[tuple[str, str]]:
        """What is left at the end of the turn: an unfinished tag is text; an unclosed block, thinking."""
        rest, self.pending = self.pending, ""
        if not rest or (self.after_close and not rest.strip()):
            return []
        return [("thinking" if self.inside else "text", rest)]

    def _step(self) -> tuple[str, str] | None:
        """One piece from the front of `pending`, or None when it must wait for more text."""
        text = self.pending
        if self.inside:
            at = text.find(CLOSE)
            if at >= 0:
                self.pending, self.inside, self.after_close = text[at + len(CLOSE):], False, True
                self.line_start = True
                return "thinking", text[:at]
            keep = partial_tag(text, CLOSE)
            if keep == len(text):
                return None
            self.pending = text[len(text) - keep:] if keep else ""
            return "thinking", text[:len(text) - keep]
        if self.after_close:
            stripped = text.lstrip()
            if not stripped:
                self.pending = ""
                return None
            self.pending, self.after_close = stripped, False
            return "text", ""
        return self._text(text)

    def _text(self, text: str) -> tuple[str, str] | None:
        """Answer text up to an opening tag at a line start (or a possible one still arriving)."""
        start, at_start = 0, self.line_start
        while True:
            nl = text.find("\n", start)
            line = text[start:] if nl < 0 else text[start:nl]
            body = line.lstrip(" \t")
            if at_start and body.startswith(OPEN):
                self.pending, self.inside = text[start + len(line) - len(body) + len(OPEN):], True
                return "text", text[:start]
            if nl < 0:
                if at_start and OPEN.startswith(body):  # `<thi` (or nothing yet) at a line start: wait
                    self.pending, self.line_start = text[start:], True
                    return ("text", text[:start]) if start else None
                self.pending, self.line_start = "", False
                return "text", text
            start, at_start = nl + 1, True


def partial_tag(text: str, tag: str) -> int:
    """How many characters at the end of `text` could be the start of `tag` (0 if none)."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def merge(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Neighbouring pieces of one kind joined."""
    out: list[tuple[str, str]] = []
    for kind, text in pieces:
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def split_thinking(text: str) -> tuple[str, str]:
    """(thinking, answer) of a whole reply's text: its inline think blocks taken out."""
    if OPEN not in text:
        return "", text
    splitter = ThinkSplitter()
    pieces = merge(splitter.feed(text) + splitter.finish())
    thinking = "".join(t for kind, t in pieces if kind == "thinking")
    return thinking, "".join(t for kind, t in pieces if kind == "text")
