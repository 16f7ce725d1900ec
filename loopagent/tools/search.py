"""Search tools: list_files and grep. ripgrep does the work; a Python walk gives the same output without it.

Both paths share one idea of which files exist: every `.gitignore` inside the workspace
(also when it is not a git repository) plus `.git/info/exclude`, nothing above the
workspace root and no global excludes; hidden files are included, `.git` never is,
symlinks are not followed. Results are sorted, so the output is the same either way.
Files the policy does not let the agent read (ToolContext.may_read) are neither listed nor
searched, and grep skips hard-linked files (another name of one can be outside the workspace).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from loopagent.cancel import CANCELLED, Cancel
from loopagent.clip import clip
from loopagent.counts import counted
from loopagent.errors import ToolError
from loopagent.messages import ToolResult
from loopagent.tools.base import Tool, ToolContext
from loopagent.tools.ignore import ignore_lines, ignored, inherited_lines, spec
from loopagent.tools.workspace import Workspace

if TYPE_CHECKING:
    import pathspec

LIST_MAX = 500  # paths shown by list_files
GREP_MAX = 200  # matching lines shown by grep
GREP_LINE_CHARS = 300  # a matching line is cut after this many characters
OUTPUT_MAX_BYTES = 32 * 1024 * 1024  # stop reading rg beyond this; the counts become lower bounds
RG_IGNORE_FLAGS = [
    "--no-config", "--hidden", "--no-require-git", "--no-ignore-parent", "--no-ignore-global",
    "--no-ignore-exclude", "--no-ignore-dot", "--glob", "!.git",
]


@functools.cache
def find_rg() -> str | None:
    """The ripgrep binary: the one pip put next to this Python first (a pyenv shim costs ~100 ms a call)."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def walk(ws: Workspace, start: str) -> Iterator[str]:
    """Workspace-relative paths of the files under `start` that the ignore rules keep (the fallback).

    Directories are opened beneath the root without following links (Workspace.scandir), so a
    directory swapped for a link while the walk runs is not entered.
    """
    root = ws.root
    if start not in ("", "."):
        st = ws.lstat(root / start)
        if st is not None and stat.S_ISREG(st.st_mode):
            yield start
            return
    base = (spec(inherited_lines(root, start)),)
    pending = [("" if start in ("", ".") else start, base)]
    while pending:
        rel_dir, specs = pending.pop()
        own = ignore_lines(root, rel_dir)
        if own:
            specs = (*specs, spec(own))
        for name, kind in ws.scandir(tuple(rel_dir.split("/")) if rel_dir else ()):
            if name == ".git":
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if kind == "dir":
                if not ignored(specs, rel + "/"):
                    pending.append((rel, specs))
            elif kind == "file" and not ignored(specs, rel):
                yield rel


# ---- globs ---------------------------------------------------------------------------------------

def expand_braces(glob: str) -> list[str]:
    """`*.{ts,tsx}` -> [`*.ts`, `*.tsx`]: ripgrep understands braces, gitignore patterns do not."""
    m = re.search(r"\{([^{}]*)\}", glob)
    if not m:
        return [glob]
    return [g for alt in m.group(1).split(",") for g in expand_braces(glob[: m.start()] + alt + glob[m.end():])]


@dataclass(frozen=True)
class Glob:
    """A gitignore-style glob matched against paths relative to the searched directory."""

    text: str

    @functools.cached_property
    def negated(self) -> bool:
        return self.text.startswith("!")

    @functools.cached_property
    def spec(self) -> pathspec.GitIgnoreSpec:
        return spec(expand_braces(self.text.removeprefix("!")))

    def keeps(self, rel: str, start: str) -> bool:
        inner = rel[len(start) + 1 :] if start not in ("", ".") and rel.startswith(start + "/") else rel
        return self.spec.match_file(inner) != self.negated

    def rg_type(self) -> list[str]:
        """rg flags that pre-filter on file names (a type, unlike --glob, does not override .gitignore)."""
        # Only `*.ext` style globs: a bare name could also be a directory, which a type cannot match.
        if not re.fullmatch(r"\*\.[\w.{},-]+", self.text):
            return []
        return ["--type-add", f"loopglob:{self.text}", "--type", "loopglob"]


# ---- running ripgrep -----------------------------------------------------------------------------

def run_rg(rg: str, root: Path, start: str, flags: list[str], cancel: Cancel) -> tuple[bytes, bool]:
    """rg's stdout (as much as OUTPUT_MAX_BYTES) and whether it was cut; ToolError when rg fails or the
    turn is cancelled (rg is killed at once, so a search of a huge tree never holds a Ctrl+C up)."""
    inherited = inherited_lines(root, start)
    with tempfile.NamedTemporaryFile("w", suffix=".gitignore", delete=True) as extra, \
            tempfile.TemporaryFile() as err:
        args = [rg, *RG_IGNORE_FLAGS, *flags]
        if inherited:
            # --ignore-file patterns are relative to the cwd (the root) and lose to any .gitignore rg
            # reads itself: the parents' rules, with git's precedence.
            extra.write("\n".join(inherited) + "\n")
            extra.flush()
            args += ["--ignore-file", extra.name]
        if start not in ("", "."):
            args += ["--", start]
        proc = subprocess.Popen(args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        forget = cancel.on_cancel(proc.kill)  # the kill closes rg's stdout: the read below ends
        try:
            chunks, cut = read_capped(proc)
            code = proc.wait()
        finally:
            forget()
        if cancel.is_set():
            raise ToolError(CANCELLED)
        if code == 2 and not chunks:
            err.seek(0)
            message = err.read().decode("utf-8", errors="replace").strip().replace("rg: ", "", 1)
            raise ToolError(f"search failed: {message or 'ripgrep exited with status 2'}")
    out = b"".join(chunks)
    if cut:
        out = out[: out.rfind(b"\n") + 1]
    return out, cut


def read_capped(proc: subprocess.Popen) -> tuple[list[bytes], bool]:
    """rg's stdout in chunks, killing rg beyond OUTPUT_MAX_BYTES; whether it was cut."""
    chunks, size = [], 0
    assert proc.stdout is not None
    with proc.stdout:
        while chunk := proc.stdout.read1(1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > OUTPUT_MAX_BYTES:
                proc.kill()
                return chunks, True
    return chunks, False


def watched(paths: Iterator[str], cancel: Cancel) -> Iterator[str]:
    """The Python walk, stopped by a cancelled turn (ToolError) between files."""
    for rel in paths:
        if cancel.is_set():
            raise ToolError(CANCELLED)
        yield rel


def start_of(ws: Workspace, path: str | None) -> str:
    """The workspace-relative start of a search; ToolError when it is outside or missing."""
    if not path:
        return ""
    real = ws.resolve(path)
    if not real.exists():
        raise ToolError(f"{ws.rel(real)} does not exist{ws.suggest(real)}")
    if not (real.is_dir() or real.is_file()):
        # A FIFO or device given by name would be read by rg and could block forever.
        raise ToolError(f"{ws.rel(real)} is not a regular file or directory; it cannot be searched")
    rel = ws.rel(real)
    return "" if rel == "." else rel


def list_paths(ws: Workspace, start: str, rg: str | None, cancel: Cancel) -> tuple[list[str], bool]:
    """Every kept file under `start`, sorted, and whether the list was cut short."""
    if rg is None:
        return sorted(watched(walk(ws, start), cancel)), False
    out, cut = run_rg(rg, ws.root, start, ["--files"], cancel)
    return sorted(out.decode("utf-8", errors="replace").splitlines()), cut


def links_allowed(ctx: ToolContext, rel: str) -> bool:
    """The user's explicit rule for a hard-linked file: one for grep, or one for read_file."""
    return ctx.explicitly_allows("grep", rel) or ctx.explicitly_allows("read_file", rel)


def searchable(ctx: ToolContext, rel: str) -> bool:
    """Whether grep may show lines of `rel` that rg found: readable by the policy, one link (or allowed)."""
    if not ctx.may_read(rel):
        return False
    try:
        st = ctx.workspace.lstat(ctx.workspace.root / rel)
    except (ToolError, ValueError):
        return False
    return st is not None and stat.S_ISREG(st.st_mode) and (st.st_nlink == 1 or links_allowed(ctx, rel))


class ListParams(BaseModel):
    path: str | None = Field(None, description="directory to list, relative to the workspace root (default: all)")
    pattern: str | None = Field(
        None, description="gitignore-style glob relative to `path`, e.g. `**/*.py`, `*.md`, `src/*.ts`"
    )


class ListFiles(Tool):
    name = "list_files"
    description = (
        f"List files in the workspace (recursively, sorted, at most {LIST_MAX}), skipping what .gitignore "
        "excludes and .git. Filter with a glob: `*.py` matches at any depth, `src/*.py` only directly in src."
    )
    params = ListParams
    effect, path_param = "read", "path"

    def __init__(self, rg: str | None | bool = True):
        # True: find rg; None: always use the Python walk (tests, benchmarks).
        self.rg = find_rg() if rg is True else rg

    def run(self, args: ListParams, ctx: ToolContext) -> ToolResult:
        start = start_of(ctx.workspace, args.path)
        paths, cut = list_paths(ctx.workspace, start, self.rg, ctx.cancel)
        paths = [p for p in paths if ctx.may_read(p)]
        if args.pattern:
            glob = Glob(args.pattern)
            paths = [p for p in paths if glob.keeps(p, start)]
        if not paths:
            where = f" under {start}" if start else ""
            return ToolResult.ok(f"no files{where}" + (f" match {args.pattern!r}" if args.pattern else ""))
        shown = paths[:LIST_MAX]
        body = "\n".join(shown)
        if len(paths) > LIST_MAX or cut:
            more = f"{len(paths) - LIST_MAX}" + ("+" if cut else "")
            body += f"\n[{more} more files not shown; narrow with path= or pattern=]"
        return ToolResult.ok(body)


# ---- grep ----------------------------------------------------------------------------------------

Match = tuple[str, int, str]


def rg_matches(rg: str, ws: Workspace, start: str, pattern: str, glob: Glob | None,
               ignore_case: bool, cancel: Cancel) -> tuple[list[Match], bool]:
    flags = ["--null", "--line-number", "--with-filename", "--no-heading", "--color", "never"]
    flags += ["--ignore-case"] if ignore_case else ["--case-sensitive"]
    flags += glob.rg_type() if glob else []
    out, cut = run_rg(rg, ws.root, start, [*flags, "--regexp", pattern], cancel)
    matches = []
    for raw in out.split(b"\n"):
        path, sep, rest = raw.partition(b"\0")
        number, colon, text = rest.partition(b":")
        if not sep or not colon:
            continue  # "binary file matches" notices and the final empty line
        matches.append((path.decode("utf-8", errors="replace"), int(number), decode_line(text)))
    return matches, cut


def python_matches(ctx: ToolContext, start: str, pattern: str, glob: Glob | None,
                   ignore_case: bool) -> list[Match]:
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"search failed: invalid regular expression {pattern!r}: {exc}") from None
    ws, matches = ctx.workspace, []
    for rel in watched(walk(ws, start), ctx.cancel):
        if (glob and not glob.keeps(rel, start)) or not ctx.may_read(rel):
            continue
        try:
            data = ws.read_bytes(ws.root / rel, allow_links=links_allowed(ctx, rel), tool="grep")
        except ToolError:
            continue
        if b"\0" in data:
            continue  # binary, as rg decides when it walks a directory
        for n, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
            if regex.search(line):
                matches.append((rel, n, clip_line(line.removesuffix("\r"))))
    return matches


def decode_line(raw: bytes) -> str:
    return clip_line(raw.decode("utf-8", errors="replace").removesuffix("\r"))


def clip_line(text: str) -> str:
    return clip(text, GREP_LINE_CHARS)


class GrepParams(BaseModel):
    pattern: str = Field(min_length=1, description="regular expression (Rust/Python syntax, no look-around)")
    path: str | None = Field(None, description="file or directory to search, relative to the workspace root")
    glob: str | None = Field(None, description="only files matching this gitignore-style glob, e.g. `*.py`")
    ignore_case: bool = Field(False, description="match case-insensitively")


class Grep(Tool):
    name = "grep"
    description = (
        "Search file contents with a regular expression, skipping .gitignore'd files, .git and binary "
        f"files. Returns sorted `path:line:text` lines, at most {GREP_MAX}. Narrow with path and glob."
    )
    params = GrepParams
    effect, path_param = "read", "path"

    def __init__(self, rg: str | None | bool = True):
        self.rg = find_rg() if rg is True else rg

    def run(self, args: GrepParams, ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        start = start_of(ws, args.path)
        glob = Glob(args.glob) if args.glob else None
        if self.rg is None:
            matches, cut = python_matches(ctx, start, args.pattern, glob, args.ignore_case), False
        else:
            matches, cut = rg_matches(self.rg, ws, start, args.pattern, glob, args.ignore_case, ctx.cancel)
            if glob:
                matches = [m for m in matches if glob.keeps(m[0], start)]
            # rg opened the files itself: keep only lines of files grep may show, judged per file.
            keep = {p for p in {m[0] for m in matches} if searchable(ctx, p)}
            matches = [m for m in matches if m[0] in keep]
        matches.sort(key=lambda m: (m[0], m[1]))
        if not matches:
            return ToolResult.ok(f"no matches for {args.pattern!r}")
        body = "\n".join(f"{path}:{n}:{text}" for path, n, text in matches[:GREP_MAX])
        if len(matches) > GREP_MAX or cut:
            files = len({m[0] for m in matches})
            total = f"{len(matches)}{'+' if cut else ''}"
            body += (f"\n[{len(matches) - GREP_MAX}{'+' if cut else ''} more matches not shown; {total} in "
                     f"{counted(files, 'file')}; narrow with path=, glob= or a more specific pattern]")
        return ToolResult.ok(body)
