"""A repository as bytes (a tar) to carry to any worker, and the diff a run left in its copy."""

from __future__ import annotations

import difflib
import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from loopagent.tarball import extract

# Not compared: a repository's own git data (carried, though) and caches the tools write as they run.
SKIP = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
MAX_DIFF = 1_000_000  # characters: a run that rewrote a data file should not fill the driver's memory
MAX_FILE = 1 << 20  # bytes of a file the diff reads; a bigger one is named, not read
MAX_FILES = 100_000  # files of a tree the diff lists
SNIFF, BINARY = 8000, b"\0"  # a NUL in a file's first bytes makes it binary, as for git
DIFFLIB_LINES = 2000  # longer files changed on both sides go to `diff -u` where it exists


def pack(directory: Path) -> bytes:
    """The directory's files as an uncompressed tar (symlinks kept as links)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for child in sorted(directory.iterdir()):
            tar.add(child, arcname=child.name)
    return buffer.getvalue()


def unpack(data: bytes, directory: Path) -> None:
    """Extract a `pack` tar into `directory` (created), refusing members that would land outside it."""
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        extract(tar, directory)


def files_of(root: Path) -> dict[str, Path]:
    """Regular files under root by POSIX relative path, without SKIP directories, at most MAX_FILES of them
    (in name order: a run that left a million files must not hold the driver while they are listed)."""
    found: dict[str, Path] = {}
    for top, dirs, files in os.walk(root):  # symlinked directories are listed, not entered
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        for name in sorted(files):
            path = Path(top, name)
            if name in SKIP or path.is_symlink() or not path.is_file():
                continue
            found[path.relative_to(root).as_posix()] = path
            if len(found) >= MAX_FILES:
                return found
    return found


def diff_trees(before: Path, after: Path) -> str:
    """A unified diff from `before` to `after` (text files; binary and huge ones named), clipped at MAX_DIFF.

    A file is read up to MAX_FILE bytes: the model may leave a 300 MiB file (a sparse one costs it
    nothing), and the driver's memory must not follow. Reading stops once the diff is past MAX_DIFF."""
    old, new = files_of(before), files_of(after)
    parts = [f"[more than {MAX_FILES} files: the diff compares the first]\n"] if MAX_FILES in (len(old), len(new)) else []
    size = 0
    for name in sorted(old.keys() | new.keys()):
        part = _file_diff(name, old.get(name), new.get(name))
        parts.append(part)
        size += len(part)
        if size > MAX_DIFF:
            break
    text = "".join(parts)
    return text if len(text) <= MAX_DIFF else text[:MAX_DIFF] + "\n[diff clipped]\n"


@dataclass(frozen=True)
class Unread:
    """A file the diff did not read: over MAX_FILE (its size and time stand for its content), or unreadable."""

    size: int
    mtime: float
    why: str


def _file_diff(name: str, old: Path | None, new: Path | None) -> str:
    """One file's part of the diff: "" when it did not change."""
    a, b = _read(old), _read(new)
    if isinstance(a, Unread) or isinstance(b, Unread):
        return _unread(name, a, b)
    if a == b:
        return ""
    if BINARY in a[:SNIFF] or BINARY in b[:SNIFF]:  # git's test; a sparse file's holes read as NULs
        return f"Binary files a/{name} and b/{name} differ\n"
    try:
        lines_a, lines_b = a.decode().splitlines(True), b.decode().splitlines(True)
    except UnicodeDecodeError:
        return f"Binary files a/{name} and b/{name} differ\n"
    source = f"a/{name}" if old is not None else "/dev/null"
    target = f"b/{name}" if new is not None else "/dev/null"
    long = min(len(lines_a), len(lines_b)) > DIFFLIB_LINES
    if long and old is not None and new is not None and (text := _gnu_diff(old, new, source, target)):
        return text
    return "".join(_terminated(difflib.unified_diff(lines_a, lines_b, source, target)))


def _read(path: Path | None) -> bytes | Unread:
    """The file's bytes (b"" when absent), or Unread when it is over MAX_FILE or cannot be read."""
    if path is None:
        return b""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return Unread(-1, 0.0, f"unreadable: {exc.strerror or exc}")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Unread(-1, 0.0, "not a regular file")
        if st.st_size > MAX_FILE:
            return Unread(st.st_size, st.st_mtime, f"{st.st_size} bytes, over the {MAX_FILE >> 20} MiB a diff reads")
        data = f.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:  # grew while it was read
        return Unread(len(data), st.st_mtime, f"over the {MAX_FILE >> 20} MiB a diff reads")
    return data


def _unread(name: str, a: bytes | Unread, b: bytes | Unread) -> str:
    """A file too large (or unreadable) on either side: named, never read; unchanged when its size and
    modification time are (the copy `before` is unpacked from keeps them)."""
    if isinstance(a, Unread) and isinstance(b, Unread) and a.size == b.size >= 0 and abs(a.mtime - b.mtime) < 0.001:
        return ""
    why = (b if isinstance(b, Unread) else a).why
    return f"Binary files a/{name} and b/{name} differ ({why}: not read)\n"


def _gnu_diff(old: Path, new: Path, source: str, target: str) -> str | None:
    """`diff -u` where it exists: difflib is quadratic on long files changed in many places (minutes for
    a 1 MiB file with every seventh line changed), GNU diff bounds its effort. None: use difflib."""
    import os
    import shutil
    import subprocess

    from loopagent.spawn import absolute_path, die_with_loop

    exe = shutil.which("diff", path=absolute_path(os.environ.get("PATH", os.defpath)))  # never a relative entry
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "-u", "--label", source, "--label", target, "--", str(old), str(new)],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60, env={"LC_ALL": "C"},
                              preexec_fn=die_with_loop())
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 1 else None


def _terminated(lines):
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
