"""Writes and renames the tripwire makes in the workspace (tripwire.py), never through a link."""

from __future__ import annotations

import os
import shutil

ASIDE = ".loop-tripwire"  # what is moved aside gets this suffix: git reads no file of that name
LINK = b"\0link\0"  # prefixes the target of a symbolic link among file contents
SPECIAL = b"\0special\0"  # stands for what is neither a file nor a link (a FIFO, a directory)


class Restorer:
    """Writes and renames inside the workspace, never through a link: the command that could have
    swapped one in has ended (its processes are killed before the tripwire runs)."""

    def __init__(self, root: str):
        self.root = root
        self.done: list[str] = []

    def path(self, rel: str) -> str:
        path = os.path.join(self.root, rel)
        parent = os.path.dirname(path)
        if os.path.realpath(parent) != os.path.normpath(parent):
            raise OSError(f"{os.path.dirname(rel)} is reached through a link")
        return path

    def restore(self, rel: str, data: bytes, why: str) -> None:
        self.attempt(why, rel, "restored", lambda: self.write(rel, data))

    def aside(self, rel: str, why: str) -> None:
        self.attempt(why, rel, f"moved aside to {rel}{ASIDE}", lambda: self.move_aside(rel))

    def rewrite(self, rel: str, data: bytes, original: bytes, why: str) -> None:
        def both() -> None:
            self.write(rel + ASIDE, original)
            self.write(rel, data)
        self.attempt(why, rel, f"removed (the file as written is {rel}{ASIDE})", both)

    def attempt(self, why: str, rel: str, outcome: str, action) -> None:
        try:
            action()
        except OSError as exc:
            self.done.append(f"{why} ({rel}) could not be put back: {exc.strerror or exc}")
        else:
            self.done.append(f"{why} ({rel}) {outcome}")

    def move_aside(self, rel: str) -> None:
        path = self.path(rel)
        if os.path.isdir(path + ASIDE) and not os.path.islink(path + ASIDE):
            shutil.rmtree(path + ASIDE)
        os.replace(path, path + ASIDE)

    def write(self, rel: str, data: bytes) -> None:
        """Replace the file at `rel` by `data` (a link when `data` is one), atomically."""
        if data == SPECIAL:
            raise OSError("it was not a regular file")
        path = self.path(rel)
        if os.path.isdir(path) and not os.path.islink(path):
            self.move_aside(rel)  # a directory where a file was: out of the way first
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}{ASIDE}-tmp")
        if os.path.lexists(tmp):
            os.unlink(tmp)
        if data.startswith(LINK):
            os.symlink(data[len(LINK):], tmp)
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        os.replace(tmp, path)
