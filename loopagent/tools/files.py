"""File tools: read_file, write_file, edit_file."""

from __future__ import annotations

import difflib

from pydantic import BaseModel, Field

from loopagent.messages import ToolResult
from loopagent.tools.base import Tool, ToolContext, ToolError


def unified_diff(old: str, new: str, rel: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
        )
    )


class ReadParams(BaseModel):
    path: str = Field(description="file path relative to the workspace root")
    offset: int = Field(0, ge=0, description="first line to return, 0-based")
    limit: int = Field(2000, ge=1, description="maximum number of lines to return")


class ReadFile(Tool):
    name = "read_file"
    description = "Read a text file in the workspace. Returns numbered lines. Page long files with offset/limit."
    params = ReadParams
    read_only = True

    def run(self, args: ReadParams, ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args.path)
        if path.is_dir():
            raise ToolError(f"{ws.rel(path)} is a directory; use list_files to see its contents")
        if not path.is_file():
            raise ToolError(f"{ws.rel(path)} does not exist")
        text = path.read_text(encoding="utf-8", errors="replace")
        ws.record_read(path)
        lines = text.splitlines()
        chosen = lines[args.offset : args.offset + args.limit]
        body = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(chosen, start=args.offset + 1))
        rest = len(lines) - args.offset - len(chosen)
        if rest > 0:
            body += f"\n[{rest} more lines; continue with offset={args.offset + len(chosen)}]"
        return ToolResult.ok(body or "(empty file)")


class WriteParams(BaseModel):
    path: str = Field(description="file path relative to the workspace root")
    content: str = Field(description="the complete new content of the file")


class WriteFile(Tool):
    name = "write_file"
    description = "Create or overwrite a file in the workspace with the given content. Parent directories are created."
    params = WriteParams

    def run(self, args: WriteParams, ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args.path)
        if path.is_dir():
            raise ToolError(f"{ws.rel(path)} is a directory")
        old = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(args.content, encoding="utf-8")
        ws.record_read(path)
        rel = ws.rel(path)
        lines = len(args.content.splitlines())
        if old is None:
            return ToolResult.ok(f"wrote {rel}: new file, {lines} lines", display=unified_diff("", args.content, rel))
        diff = unified_diff(old, args.content, rel)
        return ToolResult.ok(f"wrote {rel}: {lines} lines\n{diff}", display=diff)


class EditParams(BaseModel):
    path: str = Field(description="file path relative to the workspace root")
    old_string: str = Field(description="exact text to replace; must match exactly once")
    new_string: str = Field(description="replacement text")


class EditFile(Tool):
    name = "edit_file"
    description = (
        "Replace old_string with new_string in a file. old_string must match the file exactly "
        "(whitespace included) and exactly once. Read the file first."
    )
    params = EditParams

    def run(self, args: EditParams, ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args.path)
        if not path.is_file():
            raise ToolError(f"{ws.rel(path)} does not exist")
        ws.check_fresh(path)
        old = path.read_text(encoding="utf-8")
        count = old.count(args.old_string) if args.old_string else 0
        if count == 0:
            raise ToolError(f"old_string not found in {ws.rel(path)}; read the file and copy the text exactly")
        if count > 1:
            raise ToolError(f"old_string matches {count} times in {ws.rel(path)}; include more context")
        new = old.replace(args.old_string, args.new_string, 1)
        path.write_text(new, encoding="utf-8")
        ws.record_read(path)
        diff = unified_diff(old, new, ws.rel(path))
        return ToolResult.ok(f"edited {ws.rel(path)}\n{diff}", display=diff)
