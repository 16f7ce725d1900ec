"""One process at a time in a shadow repository, and git's own lock files that nobody holds removed.

Snapshots and restores of one workspace are serialised with an `fcntl.flock` on a file next to
the shadow git directory (it must exist before the directory is built). A second run waits for it
(up to a limit) instead of failing. While we hold it no other loop works in the repository, so a
git lock file found then (`loop-index.lock` after a kill during a snapshot) is stale: removed.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from loopagent.checkpoint.shadow import REF, CheckpointError

LOCK_WAIT = 60.0
GIT_LOCKS = ("loop-index.lock", "index.lock", "HEAD.lock", "config.lock", "packed-refs.lock", f"{REF}.lock",
             "shallow.lock")


def lock_file(git_dir: Path) -> Path:
    """The flock file of a shadow git directory (a sibling, so it outlives a half-built directory)."""
    return git_dir.parent / f"{git_dir.name}.lock"


class RepoLock:
    """Re-entrant within one process: the outermost `hold` takes the flock, nested ones count."""

    def __init__(self, git_dir: Path, wait: float = LOCK_WAIT):
        self.git_dir = git_dir
        self.wait = wait
        self.fd = -1
        self.depth = 0
        self.on_wait: Callable[[str], None] = lambda text: None  # told once when another process holds it

    def __enter__(self) -> RepoLock:
        if self.depth == 0:
            self.fd = self.take()
            try:
                clear_stale(self.git_dir)
            except CheckpointError:
                self.release()
                raise
        self.depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.release()

    def take(self) -> int:
        path = lock_file(self.git_dir)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise CheckpointError(f"cannot open the checkpoint lock: {(exc.strerror or str(exc)).lower()}: "
                                  f"{path}") from None
        deadline, told = time.monotonic() + self.wait, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if not told and self.wait > 0:
                    told = True
                    self.on_wait(f"waiting for another loop process to finish with the checkpoints ({path})")
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise CheckpointError(f"another loop process held the checkpoint lock {path} for over "
                                          f"{self.wait:g} s") from None
                time.sleep(0.05)  # polling a lock held by another process; there is nothing to wait on

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def clear_stale(git_dir: Path) -> None:
    """Remove git lock files in the shadow repository (we hold its flock: nobody else is in it)."""
    if not git_dir.is_dir():
        return
    found = [git_dir / name for name in GIT_LOCKS]
    refs = git_dir / "refs"
    if refs.is_dir():
        found += refs.rglob("*.lock")
    for path in found:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CheckpointError(f"cannot remove the stale git lock {path}: {exc.strerror or exc}") from None
