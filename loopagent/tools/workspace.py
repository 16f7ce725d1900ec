"""The workspace: the one directory every file tool is confined to, and what the agent has read in it."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.tools.base import ToolError


@dataclass
class Workspace:
    root: Path
    # real path -> sha256 of the bytes at the last read or write. A content hash, not mtime/size:
    # two writes within one mtime tick with equal sizes must still count as a change.
    reads: dict[Path, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))

    def resolve(self, path: str) -> Path:
        """The real path of `path` inside the workspace; raises ToolError when it leaves it.

        Symlinks are resolved (parents included) before the check, so a link that
        points outside is refused for reading and for writing alike; a path that does
        not exist yet resolves through its deepest existing parent.
        """
        if not path or "\x00" in path:
            raise ToolError("path is empty or contains a NUL byte; give a path relative to the workspace")
        raw = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
        target = Path(os.path.realpath(raw if raw.is_absolute() else self.root / raw))
        if not self.contains(target):
            raise ToolError(
                f"path {path!r} is outside the workspace (it resolves to {target}); "
                "use a path relative to the workspace root"
            )
        return target

    def contains(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents

    def rel(self, path: Path) -> str:
        """`path` as shown to the model and the user: relative to the workspace."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)

    def read_bytes(self, path: Path) -> bytes:
        """The bytes of a regular file; ToolError for directories, missing and special files."""
        rel = self.rel(path)
        try:
            st = path.stat()
        except FileNotFoundError:
            raise ToolError(f"{rel} does not exist{self.suggest(path)}") from None
        except OSError as exc:
            raise ToolError(f"cannot read {rel}: {exc.strerror}") from None
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{rel} is a directory; use list_files to see what it contains")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{rel} is not a regular file (a device, socket or pipe); it cannot be read")
        try:
            return path.read_bytes()
        except OSError as exc:
            raise ToolError(f"cannot read {rel}: {exc.strerror}") from None

    def suggest(self, path: Path) -> str:
        """A hint naming files with a similar name in the same directory, or ''."""
        import difflib

        try:
            names = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
        except OSError:
            return ""
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if not close:
            return ""
        return "; did you mean " + ", ".join(self.rel(path.parent / n) for n in close) + "?"

    def record_read(self, path: Path, data: bytes | None = None) -> None:
        """Remember the content the agent has seen, for the stale-edit check."""
        if data is None:
            data = path.read_bytes()
        self.reads[path] = hashlib.sha256(data).hexdigest()

    def check_fresh(self, path: Path, data: bytes) -> None:
        """Refuse an edit of a file not read in this session, or whose bytes changed since."""
        seen = self.reads.get(path)
        if seen is None:
            raise ToolError(f"{self.rel(path)} has not been read in this session; read_file it before editing")
        if hashlib.sha256(data).hexdigest() != seen:
            raise ToolError(
                f"{self.rel(path)} changed on disk since it was last read; read_file it again before editing"
            )
