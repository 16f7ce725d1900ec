"""The workspace: the one directory every file tool is confined to."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.tools.base import ToolError


@dataclass
class Workspace:
    root: Path
    # path -> (mtime_ns, size) at the last read; edit_file refuses files not read or changed since.
    reads: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))

    def resolve(self, path: str) -> Path:
        """The real path of `path` inside the workspace; raises ToolError when it leaves it.

        Symlinks are resolved (parents included) before the check, so a link that
        points outside is refused for reading and for writing alike.
        """
        if not path or "\x00" in path:
            raise ToolError("path is empty or contains a NUL byte; give a path relative to the workspace")
        raw = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
        target = Path(os.path.realpath(raw if raw.is_absolute() else self.root / raw))
        if target != self.root and self.root not in target.parents:
            raise ToolError(
                f"path {path!r} is outside the workspace; use a path relative to the workspace root"
            )
        return target

    def rel(self, path: Path) -> str:
        """`path` as shown to the model and the user: relative to the workspace."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)

    def stamp(self, path: Path) -> tuple[int, int]:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size)

    def record_read(self, path: Path) -> None:
        self.reads[path] = self.stamp(path)

    def check_fresh(self, path: Path) -> None:
        """Refuse an edit of a file not read in this session or changed on disk since."""
        seen = self.reads.get(path)
        if seen is None:
            raise ToolError(f"{self.rel(path)} has not been read in this session; read_file it before editing")
        if self.stamp(path) != seen:
            raise ToolError(
                f"{self.rel(path)} changed on disk since it was last read; read_file it again before editing"
            )
