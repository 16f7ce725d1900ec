"""The lock a running session holds, so that no second process appends to its file.

An `fcntl.flock` on a sidecar file (`<id>.lock`, next to the session) that also names the holding
process. The kernel drops an flock when its process dies, so a lock left by a killed `loop` is
simply taken over; the pid in the file is only what the refusal names.
"""

from __future__ import annotations

import atexit
import fcntl
import os
from pathlib import Path

from loopagent.errors import SessionError


def lock_path(session: Path) -> Path:
    """The sidecar lock file of a session file."""
    return session.with_suffix(".lock")


def holder(session: Path) -> str:
    """The pid written in a session's lock file ('' when there is none)."""
    try:
        return lock_path(session).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return ""


def in_use(session: Path) -> str:
    """The pid of the process holding the session's lock, or '' when nobody holds it."""
    try:
        fd = os.open(lock_path(session), os.O_RDONLY)
    except OSError:
        return ""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return holder(session) or "?"
    finally:
        os.close(fd)
    return ""


class SessionLock:
    """Held while a process writes a session file; `release` gives it up (and removes the sidecar)."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self.fd = fd

    @classmethod
    def take(cls, session: Path) -> SessionLock:
        """Lock `session` for this process; raises SessionError naming the holder when it is taken."""
        path = lock_path(session)
        for _ in range(10):  # the previous holder may unlink the file between our open and our flock
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise SessionError(f"cannot lock session {session.stem}: {(exc.strerror or str(exc)).lower()}: "
                                   f"{path}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                pid = holder(session) or "?"
                raise SessionError(f"session {session.stem} is in use by process {pid}") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except OSError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                lock = cls(path, fd)
                atexit.register(lock.release)  # a clean exit leaves no sidecar; a kill leaves one nobody holds
                return lock
            os.close(fd)
        raise SessionError(f"cannot lock session {session.stem}: its lock file {path} keeps changing")

    def move(self, session: Path) -> None:
        """Follow a renamed session file (the flock stays on the same open file)."""
        path = lock_path(session)
        try:
            os.rename(self.path, path)
            self.path = path
        except OSError:
            pass

    def release(self) -> None:
        """Give the lock up; the sidecar goes first, so nobody locks a file that is about to vanish unseen."""
        if self.fd < 0:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1
