"""File tools: read_file, write_file, edit_file. Every path goes through the Workspace, which confines it."""

from __future__ import annotations

import difflib
import itertools
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from loopagent.clip import NO_GAP, Gap, clip
from loopagent.counts import counted
from loopagent.details import Details
from loopagent.errors import ToolError
from loopagent.messages import ToolResult
from loopagent.tools.base import Tool, ToolContext
from loopagent.tools.diffs import clip_diff, diff_stat, unified_diff
from loopagent.tools.edit_result import edit_result
from loopagent.tools.spec import Resource
from loopagent.tools.workspace import Workspace

READ_LIMIT = 2000  # lines per read_file call by default
READ_MAX_BYTES = 50_000  # a page stops early when its text passes this
LINE_MAX_CHARS = 2000  # longer lines (minified code, data) are cut in the listing
NUMBER_PREFIX = re.compile(r"^\s*\d+\t")
SNIFF_BYTES = 8192  # binary or text is decided from this much of the head
# Up to this size read_file reads the whole file (its line count, the stale-edit hash); beyond it,
# it reads just far enough for the page: a 2 GiB file must not be read to show 50 KB of it.
WHOLE_MAX_BYTES = 10_000_000
EDIT_MAX_BYTES = WHOLE_MAX_BYTES  # edit_file reads and rewrites whole files; larger ones are refused
LINE_KEEP_BYTES = LINE_MAX_CHARS * 4  # of one line of a large file, enough bytes for what the listing shows


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB: the same test git and ripgrep use."""
    return b"\0" in data[:8192]


def lines_of(text: str) -> list[str]:
    """Lines split on \\n only (as grep numbers them), without their \\r of CRLF endings."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def numbered(lines: list[str], first: int, unread: Sequence[int] = ()) -> str:
    """`lines` in read_file's listing format; `first` is the 1-based number of the first line.

    `unread[i]`: bytes of line i that were never read (a huge line of a large file).
    """
    out = []
    for n, line in enumerate(lines, start=first):
        more = unread[n - first] if n - first < len(unread) else 0
        line = clip(line, LINE_MAX_CHARS, gap=Gap(0, more) if more else NO_GAP)
        out.append(f"{n:>6}\t{line}")
    return "\n".join(out)


class ReadParams(BaseModel):
    path: str = Field(description="file path relative to the workspace root")
    offset: int = Field(0, ge=0, description="number of lines to skip from the start of the file")
    limit: int = Field(READ_LIMIT, ge=1, description="maximum number of lines to return")


class ReadFile(Tool):
    name = "read_file"
    description = (
        "Read a UTF-8 text file in the workspace. Returns lines as `<line number>\\t<text>`; the numbers "
        f"are not part of the file. At most {READ_LIMIT} lines or ~{READ_MAX_BYTES // 1000} KB per call; "
        "page through longer files with offset (lines to skip) and limit."
    )
    params = ReadParams
    effect, path_param = "read", "path"

    def run(self, args: ReadParams, ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args.path)
        rel = ws.rel(path)
        with ws.open_regular(path, allow_links=ctx.explicitly_allows(self.name, rel), tool=self.name) as fd:
            if fd is None:
                raise ToolError(f"{rel} does not exist{ws.suggest(path)}")
            size = os.fstat(fd).st_size
            data = read_upto(fd, SNIFF_BYTES)
            if is_binary(data):
                raise ToolError(f"{rel} is a binary file ({size} bytes); read_file shows text files only")
            data += read_upto(fd, WHOLE_MAX_BYTES + 1 - len(data))
            if len(data) > WHOLE_MAX_BYTES:
                rest = iter(lambda: os.read(fd, 1 << 16), b"")
                body, shown = large_page(rel, size, itertools.chain([data], rest), args)
                return ToolResult.ok(body, details=Details("ok", lines=shown))
        ws.record_read(path, data)
        lines = lines_of(data.decode("utf-8", errors="replace"))
        if not lines:
            return ToolResult.ok(f"{rel} is empty (0 lines)", details=Details("ok", lines=0, total_lines=0))
        if args.offset >= len(lines):
            raise ToolError(f"offset {args.offset} is past the end of {rel}, which has {counted(len(lines), 'line')}")
        page = fit_page(lines, args.offset, args.limit)
        body = numbered(page, args.offset + 1)
        end = args.offset + len(page)
        if end < len(lines):
            body += (f"\n[lines {args.offset + 1}-{end} of {len(lines)} in {rel}; "
                     f"{len(lines) - end} more; continue with offset={end}]")
        return ToolResult.ok(body, details=Details("ok", lines=len(page), total_lines=len(lines)))

    def resource(self, args: Mapping[str, Any]) -> Resource:
        offset, limit = args.get("offset", 0), args.get("limit", READ_LIMIT)
        return Resource("read", posixpath.normpath(args["path"]), (offset, offset + limit))


def read_upto(fd: int, n: int) -> bytes:
    """At most `n` bytes from `fd`, fewer only at the end of the file."""
    parts, left = [], n
    while left > 0 and (part := os.read(fd, min(left, 1 << 20))):
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def large_page(rel: str, size: int, chunks: Iterable[bytes], args: ReadParams) -> tuple[str, int]:
    """A page of a file over WHOLE_MAX_BYTES, read only as far as the page needs, and how many lines it
    shows; the file's lines are not counted."""
    page, unread, used, n = [], [], 0, 0
    for line, dropped in split_lines(chunks):
        if n >= args.offset:
            used += min(len(line), LINE_MAX_CHARS) + 8
            if len(page) >= args.limit or (page and used > READ_MAX_BYTES):
                return (numbered(page, args.offset + 1, unread) +
                        f"\n[lines {args.offset + 1}-{n} of {rel} ({size} bytes, too large to count its lines); "
                        f"more follow; continue with offset={n}]"), len(page)
            page.append(line)
            unread.append(dropped)
        n += 1
    if not page:
        raise ToolError(f"offset {args.offset} is past the end of {rel}, which has {counted(n, 'line')}")
    return numbered(page, args.offset + 1, unread), len(page)


def split_lines(chunks: Iterable[bytes]) -> Iterator[tuple[str, int]]:
    """Lines of a byte stream as lines_of splits them, each kept to LINE_KEEP_BYTES; with the
    number of bytes left out of it (memory stays bounded on a file with no newline)."""
    kept, dropped = bytearray(), 0
    for chunk in chunks:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            stop = len(chunk) if nl < 0 else nl
            take = max(0, min(stop - start, LINE_KEEP_BYTES - len(kept)))
            kept += chunk[start : start + take]
            dropped += stop - start - take
            if nl < 0:
                break
            yield bytes(kept).decode("utf-8", errors="replace").removesuffix("\r"), dropped
            kept, dropped, start = bytearray(), 0, nl + 1
    if kept or dropped:
        yield bytes(kept).decode("utf-8", errors="replace"), dropped


def fit_page(lines: list[str], offset: int, limit: int) -> list[str]:
    """Up to `limit` lines from `offset`, stopping before the page passes READ_MAX_BYTES (at least one line)."""
    page, size = [], 0
    for line in lines[offset : offset + limit]:
        size += min(len(line), LINE_MAX_CHARS) + 8
        if page and size > READ_MAX_BYTES:
            break
        page.append(line)
    return page


@dataclass(frozen=True)
class Change:
    """A file's bytes before (None: new file) and after a write or an edit, not yet on disk."""

    path: Path
    rel: str
    old: bytes | None
    new: bytes
    tool: str = "write_file"
    allow_links: bool = False  # the user's explicit allow rule for a hard-linked file

    def diff(self) -> str:
        before = "" if self.old is None else self.old.decode("utf-8", errors="replace")
        return unified_diff(before, self.new.decode("utf-8", errors="replace"), self.rel)

    def apply(self, ws: Workspace) -> None:
        """Write the new bytes (atomically); the agent's own write counts as a read for the stale check."""
        ws.write_bytes(self.path, self.new, allow_links=self.allow_links, tool=self.tool)
        ws.record_read(self.path, self.new)


def preview_of(plan: Callable[[], Change]) -> str:
    """The diff an approval prompt shows, or why the call would fail."""
    try:
        return plan().diff()
    except ToolError as exc:
        return f"(this call will fail: {exc})"


class WriteParams(BaseModel):
    path: str = Field(description="file path relative to the workspace root")
    content: str = Field(description="the complete new content of the file")


class WriteFile(Tool):
    name = "write_file"
    description = (
        "Create a file or replace its whole content. Parent directories are created. "
        "Returns the diff against the old content. For small changes to an existing file prefer edit_file."
    )
    params = WriteParams
    effect, path_param = "edit", "path"

    def plan(self, args: WriteParams, ctx: ToolContext) -> Change:
        ws = ctx.workspace
        path = ws.resolve_writable(args.path)
        rel, st = ws.rel(path), ws.lstat(path)
        if path == ws.root or (st is not None and stat.S_ISDIR(st.st_mode)):
            raise ToolError(f"{rel} is a directory; give a file path")
        allow = ctx.explicitly_allows(self.name, rel)
        old = ws.read_if_exists(path, allow_links=allow, tool=self.name)
        return Change(path, rel, old, args.content.encode("utf-8"), self.name, allow)

    def preview(self, args: WriteParams, ctx: ToolContext) -> str:
        return preview_of(lambda: self.plan(args, ctx))

    def resource(self, args: Mapping[str, Any]) -> Resource:
        return Resource("write", posixpath.normpath(args["path"]))

    def run(self, args: WriteParams, ctx: ToolContext) -> ToolResult:
        change = self.plan(args, ctx)
        if change.old == change.new:
            ctx.workspace.record_read(change.path, change.new)
            return ToolResult.ok(f"{change.rel} unchanged: it already has this content")
        change.apply(ctx.workspace)
        count = len(lines_of(args.content))
        diff = change.diff()
        if change.old is None:
            return edit_result(ctx, change, f"created {change.rel}: new file, {counted(count, 'line')}", diff)
        return edit_result(ctx, change, f"wrote {change.rel}: {counted(count, 'line')} ({diff_stat(diff)})\n"
                                        f"{clip_diff(diff)}", diff)


class EditParams(BaseModel):
    path: str = Field(description="file path relative to the workspace root")
    old_string: str = Field(description="exact text to replace, whitespace included; must match exactly once")
    new_string: str = Field(description="replacement text")
    replace_all: bool = Field(False, description="replace every occurrence instead of exactly one")


class EditFile(Tool):
    name = "edit_file"
    description = (
        "Replace old_string with new_string in a file you have read with read_file. old_string must match "
        "the file exactly (whitespace and indentation included, without read_file's line numbers) and "
        "exactly once, unless replace_all is true. Include surrounding lines to make it unique. "
        "Returns the diff."
    )
    params = EditParams
    effect, path_param = "edit", "path"

    def plan(self, args: EditParams, ctx: ToolContext) -> tuple[Change, str]:
        """The change and what it replaces; ToolError (file untouched) when the edit is not exact."""
        ws = ctx.workspace
        path = ws.resolve_writable(args.path)
        rel = ws.rel(path)
        allow = ctx.explicitly_allows(self.name, rel)
        data = ws.read_bytes(path, allow_links=allow, tool=self.name, most=EDIT_MAX_BYTES)
        if is_binary(data):
            raise ToolError(f"{rel} is a binary file; edit_file changes text files only")
        ws.check_fresh(path, data)
        if not args.old_string:
            raise ToolError("old_string is empty; to create or replace a whole file use write_file")
        if args.old_string == args.new_string:
            raise ToolError("old_string and new_string are identical; there is nothing to change")
        # surrogateescape keeps bytes that are not UTF-8 exactly as they were.
        text = data.decode("utf-8", errors="surrogateescape")
        old, new = crlf_aware(text, args.old_string, args.new_string)
        starts = match_starts(text, old)
        if not starts:
            raise ToolError(f"old_string was not found in {rel}. {near_miss(text, old)}")
        if len(starts) > 1 and not args.replace_all:
            raise ToolError(
                f"old_string matches {len(starts)} times in {rel}, at lines {line_list(text, starts)}; "
                "the file is unchanged. Include more surrounding lines so it matches once, "
                "or set replace_all to change every occurrence."
            )
        updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        what = f"{len(starts)} occurrences" if len(starts) > 1 else f"1 occurrence at line {line_list(text, starts)}"
        return Change(path, rel, data, updated.encode("utf-8", errors="surrogateescape"), self.name, allow), what

    def preview(self, args: EditParams, ctx: ToolContext) -> str:
        return preview_of(lambda: self.plan(args, ctx)[0])

    def resource(self, args: Mapping[str, Any]) -> Resource:
        return Resource("write", posixpath.normpath(args["path"]))

    def run(self, args: EditParams, ctx: ToolContext) -> ToolResult:
        change, what = self.plan(args, ctx)
        change.apply(ctx.workspace)
        diff = change.diff()
        return edit_result(ctx, change, f"edited {change.rel}: replaced {what} ({diff_stat(diff)})\n"
                                        f"{clip_diff(diff)}", diff)


def crlf_aware(text: str, old: str, new: str) -> tuple[str, str]:
    """In a CRLF file, LF-only strings from the model mean CRLF (read_file does not show the \\r)."""
    if "\r\n" in text and "\n" in old and "\r\n" not in old:
        return old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new


def match_starts(text: str, old: str) -> list[int]:
    """Offsets of the non-overlapping occurrences, as str.replace would see them."""
    starts, i = [], text.find(old)
    while i >= 0:
        starts.append(i)
        i = text.find(old, i + len(old))
    return starts


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def line_list(text: str, starts: list[int], most: int = 20) -> str:
    shown = ", ".join(str(line_of(text, s)) for s in starts[:most])
    return shown + (f" and {len(starts) - most} more" if len(starts) > most else "")


def near_miss(text: str, old: str) -> str:
    """What the model should do after a failed match: the likely cause and where the text really is."""
    old_lines = old.removesuffix("\n").split("\n")
    if all(NUMBER_PREFIX.match(line) for line in old_lines if line.strip()):
        return ("old_string starts its lines with line numbers from read_file's output; "
                "send the file's text without the numbers and the tab after them.")
    span = whitespace_match(text, old)
    if span:
        first, last = span
        return (f"Lines {first}-{last} match it except for whitespace or indentation; copy them exactly "
                f"as they are in the file:\n{excerpt(text, first, last)}")
    similar = similar_lines(text, old_lines)
    if similar:
        first, last, ratio = similar
        return (f"The most similar text is at lines {first}-{last} ({ratio:.0%} alike); "
                f"read the file again and copy the text exactly:\n{excerpt(text, first, last)}")
    return "Read the file again and copy the text to replace exactly, including whitespace."


def whitespace_match(text: str, old: str) -> tuple[int, int] | None:
    """First and last line of a place where `old` matches once all whitespace is ignored."""
    squashed_old = "".join(old.split())
    if not squashed_old:
        return None
    chars, lines, line = [], [], 1
    for ch in text:
        if ch == "\n":
            line += 1
        elif not ch.isspace():
            chars.append(ch)
            lines.append(line)
    at = "".join(chars).find(squashed_old)
    if at < 0:
        return None
    return lines[at], lines[at + len(squashed_old) - 1]


def similar_lines(text: str, old_lines: list[str]) -> tuple[int, int, float] | None:
    """The window of the file most like `old_lines` (difflib ratio >= 0.6); bounded work on big files."""
    lines = text.split("\n")
    size = len(old_lines)
    if size * len(lines) > 400_000:
        return None
    target = "\n".join(old_lines)
    best: tuple[int, int, float] | None = None
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    for i in range(max(1, len(lines) - size + 1)):
        matcher.set_seq1("\n".join(lines[i : i + size]))
        if matcher.real_quick_ratio() < 0.6 or matcher.quick_ratio() < 0.6:
            continue
        ratio = matcher.ratio()
        if ratio >= 0.6 and (best is None or ratio > best[2]):
            best = (i + 1, min(i + size, len(lines)), ratio)
    return best


def excerpt(text: str, first: int, last: int, most: int = 12) -> str:
    lines = lines_of(text)[first - 1 : min(last, first + most - 1)]
    return numbered(lines, first)

