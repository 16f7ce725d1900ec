"""A repository as bytes (a tar) to carry to any worker, and the diff a run left in its copy."""

from __future__ import annotations

import difflib
import io
import tarfile
from pathlib import Path

from loopagent.tarball import extract

# Not compared: a repository's own git data (carried, though) and caches the tools write as they run.
SKIP = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
MAX_DIFF = 1_000_000  # characters: a run that rewrote a data file should not fill the driver's memory


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
    """Regular files under root by POSIX relative path, without SKIP directories."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if SKIP.intersection(rel.parts) or path.is_symlink() or not path.is_file():
            continue
        found[rel.as_posix()] = path
    return found


def diff_trees(before: Path, after: Path) -> str:
    """A unified diff from `before` to `after` (text files; binary ones named), clipped at MAX_DIFF."""
    old, new = files_of(before), files_of(after)
    parts: list[str] = []
    for name in sorted(old.keys() | new.keys()):
        a = old[name].read_bytes() if name in old else b""
        b = new[name].read_bytes() if name in new else b""
        if a == b:
            continue
        try:
            lines_a, lines_b = a.decode().splitlines(True), b.decode().splitlines(True)
        except UnicodeDecodeError:
            parts.append(f"Binary files a/{name} and b/{name} differ\n")
            continue
        source = f"a/{name}" if name in old else "/dev/null"
        target = f"b/{name}" if name in new else "/dev/null"
        parts.extend(_terminated(difflib.unified_diff(lines_a, lines_b, source, target)))
    text = "".join(parts)
    return text if len(text) <= MAX_DIFF else text[:MAX_DIFF] + "\n[diff clipped]\n"


def _terminated(lines):
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
