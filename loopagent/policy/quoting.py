"""Bash quoting read from source text: dequoting words, $'...' escapes, and where substitutions start."""

from __future__ import annotations

import re
from collections.abc import Iterable

ANSI_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
ANSI_NUMERIC = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3})")
QUOTED_HEREDOC = re.compile(r"<<(-?)([ \t]*)(['\"])(\w+)\3")
# A `#` starts a comment only as the first character of a word, i.e. after one of these.
WORD_BREAKS = " \t\n;&|()<>"


def dequote(raw: str) -> str:
    """Remove bash quoting from one word's source text, decoding $'...' escapes."""
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if raw.startswith("$'", i):
            end = ansi_end(raw, i + 2)
            out.append(ansi_decode(raw[i + 2:end]))
            i = end + 1
        elif ch == "'":
            end = raw.find("'", i + 1)
            end = len(raw) if end < 0 else end
            out.append(raw[i + 1:end])
            i = end + 1
        elif raw.startswith('$"', i) or ch == '"':
            i = double_quoted(raw, i + (2 if ch == "$" else 1), out)
        elif ch == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def double_quoted(raw: str, i: int, out: list[str]) -> int:
    """Append the body of a "..." string starting at `i`; return the index after its closing quote."""
    while i < len(raw) and raw[i] != '"':
        if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            i += 1
        if raw[i] != "\n" or raw[i - 1] != "\\":  # backslash-newline joins lines
            out.append(raw[i])
        i += 1
    return i + 1


def ansi_end(raw: str, i: int) -> int:
    while i < len(raw) and raw[i] != "'":
        i += 2 if raw[i] == "\\" else 1
    return min(i, len(raw))


def ansi_decode(body: str) -> str:
    """Decode the escapes of a $'...' body."""
    def number(m: re.Match) -> str:
        code = m.group(1)
        value = int(code[1:], 16) if code[0] in "xuU" else int(code, 8)
        return chr(min(value, 0x10FFFF))

    out, i = [], 0
    while i < len(body):
        m = ANSI_NUMERIC.match(body, i)
        if m:
            out.append(number(m))
            i = m.end()
        elif body[i] == "\\" and i + 1 < len(body):
            out.append(ANSI_ESCAPES.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def unquote_heredoc_delimiters(line: str) -> tuple[str, set[int]]:
    """Rewrite `<<'EOF'` as `<<EOF`, which bashlex can parse; return where it did so.

    Only word characters sit between the removed quotes, so the quoting of every
    other character is unchanged. The bodies of those here-documents stay literal.
    """
    spots: set[int] = set()
    out, last = [], 0
    for m in QUOTED_HEREDOC.finditer(line):
        out.append(line[last:m.start()])
        spots.add(sum(map(len, out)))
        out.append(f"<<{m.group(1)}{m.group(2)}{m.group(4)}")
        last = m.end()
    out.append(line[last:])
    return "".join(out), spots


def substitution_starts(text: str, skip: Iterable[tuple[int, int]] = ()) -> set[int]:
    """Where bash would start a `$(`, `` ` ``, `<(` or `>(` substitution; `skip` are here-document bodies.

    Read the way bash reads quoting: nothing in '...' or $'...', only `$(` and backticks
    inside "...", nothing after a backslash or in a comment; "..." nests inside `$(...)`.
    A backslash-escaped backtick inside backticks (a nested substitution) is reported as -1,
    a position no parsed command has, so the caller fails closed.
    """
    skip_at = dict(skip)
    found: set[int] = set()
    stack = [["top", 0]]  # context kind, open parentheses inside a $( ... )
    i, n = 0, len(text)
    while i < n:
        if i in skip_at:
            i = max(skip_at[i], i + 1)
            continue
        ctx = stack[-1]
        ch = text[i]
        opens = 2 if text.startswith(("$(", "<(", ">("), i) else 1 if ch == "`" else 0
        if ch == "\\":
            if text.startswith("`", i + 1) and any(c[0] == "backtick" for c in stack):
                found.add(-1)
            i += 2
            continue
        if ctx[0] == "double":
            if ch == '"':
                stack.pop()
            elif ch == "`" and any(c[0] == "backtick" for c in stack):
                pop_to(stack, "backtick")
            elif opens and ch != "<" and ch != ">":
                found.add(i)
                stack.append(["backtick" if ch == "`" else "sub", 0])
                i += opens
                continue
            i += 1
        elif ch == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif text.startswith("$'", i):
            i = ansi_end(text, i + 2) + 1
        elif ch == '"':
            stack.append(["double", 0])
            i += 1
        elif ch == "#" and (i == 0 or text[i - 1] in WORD_BREAKS):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif ch == "`" and ctx[0] == "backtick":
            stack.pop()
            i += 1
        elif opens:
            found.add(i)
            stack.append(["backtick" if ch == "`" else "sub", 0])
            i += opens
        else:
            if ctx[0] == "sub" and ch in "()":
                ctx[1] += 1 if ch == "(" else -1
                if ctx[1] < 0:
                    stack.pop()
            i += 1
    return found


def pop_to(stack: list, kind: str) -> None:
    """Close every context down to and including the innermost `kind`."""
    while len(stack) > 1 and stack.pop()[0] != kind:
        pass
