"""The session writer: a listener that appends one JSON line per message, durably.

Each line is written with one O_APPEND write, then fsynced, so a crash loses at most
the line being written and the cost of a line never depends on the session's length.
The file is never rewritten; the only exception is a repair that cuts off a torn last line.

As a listener it never raises: a line that cannot be written is recorded as the writer's
failure (`health`), and the loop, which asks between steps, stops the run with status `error`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from loopagent import __version__
from loopagent.errors import SessionWriteError
from loopagent.events import (
    CheckRan,
    Compacted,
    ContextEdit,
    Event,
    HookRan,
    MessageAdded,
    Notice,
    RunEnd,
    SessionStarted,
)
from loopagent.messages import AssistantMessage, UserMessage, to_record
from loopagent.secrets import public_url
from loopagent.session.lock import SessionLock

SCHEMA = 1
KEPT = ("completed", "aborted")  # run ends that keep a session without a model reply (aborted: resumable)


def now_iso() -> str:
    """UTC now, ISO 8601 with microseconds and a Z."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def header(session_id: str, workspace: Path, model: str, base_url: str, task: str,
           parent: dict | None = None, approval: str | None = None) -> dict:
    """The first line of a session file. Never holds the API key. A fork names its `parent`:
    {"session": id, "message": index of the last message both files share}."""
    head = {
        "type": "header", "schema": SCHEMA, "id": session_id, "workspace": os.path.realpath(workspace),
        "model": model, "base_url": public_url(base_url), "created": now_iso(),
        "loop_version": __version__, "task": task[:500],
    }
    if parent is not None:
        head["parent"] = parent
    if approval is not None:  # the mode the run started in: `loop replay` runs under it again
        head["approval"] = approval
    return head


def unlink(path: Path) -> None:
    """Remove a file if it is still there."""
    try:
        os.unlink(path)
    except OSError:
        pass


def encode(record: dict) -> bytes:
    """One compact JSON line (the listing counts `"role":"assistant"` in this exact form)."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class SessionWriter:
    """Listener: SessionStarted -> its `header`, MessageAdded -> a `message` line, Compacted -> `compacted`,
    ContextEdit -> `edit`, a repair Notice -> `repair`, RunEnd -> `end`."""

    def __init__(self, path: Path, fd: int, lock: SessionLock | None = None):
        self.path = path
        self.id = path.stem
        self.fd = fd
        self.lock = lock  # held while this process writes the file (session/lock.py)
        self.broken = False
        self.failure = ""  # why the last write failed: the run must stop (see `health`)
        self.size = os.fstat(fd).st_size  # what the file must measure after our own appends
        self.answered = False  # a model reply was recorded
        self.discard_unanswered = False  # a new one-shot session: gone again if the run ends without a reply
        self.spoken = False  # the file holds a user message: a conversation, worth resuming

    @classmethod
    def create(cls, path: Path, head: dict | None = None) -> SessionWriter:
        """Start a new session file; refuses to overwrite an existing file. Its header line comes with
        the SessionStarted event, or is written now when `head` is given (a file written without a feed)."""
        lock = SessionLock.take(path)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            lock.release()
            raise SessionWriteError(f"cannot create session file {path}: {exc.strerror or exc}") from None
        writer = cls(path, fd, lock)
        if head is not None:
            try:
                writer.write(head)
            except SessionWriteError:
                writer.close()
                raise
        return writer

    def health(self) -> str:
        """'' while every line was written; else why the session cannot be written (the run stops)."""
        return self.failure

    @classmethod
    def reopen(cls, path: Path, valid_size: int, lock: SessionLock | None = None) -> SessionWriter:
        """Continue an existing file after its first `valid_size` bytes (a torn tail is cut off).

        `lock` is the session's lock, taken before the file was read (else it is taken here)."""
        lock = lock or SessionLock.take(path)
        fd = -1
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
            if os.fstat(fd).st_size > valid_size:
                os.ftruncate(fd, valid_size)
            if valid_size and os.pread(fd, 1, valid_size - 1) != b"\n":  # a whole last line, cut before its newline
                os.write(fd, b"\n")
        except OSError as exc:
            if fd >= 0:
                os.close(fd)
            lock.release()
            raise SessionWriteError(f"cannot append to session file {path}: {exc.strerror or exc}") from None
        writer = cls(path, fd, lock)
        writer.spoken = True  # a file we continue is never ours to remove
        return writer

    def switch(self, path: Path) -> None:
        """Continue in a new, empty file (a /clear or a rewound conversation); its header and messages
        follow as events (SessionStarted, then MessageAdded for each message it starts with)."""
        old, old_lock, old_path, empty = self.fd, self.lock, self.path, not self.spoken and not self.lost()
        fresh = SessionWriter.create(path)
        self.path, self.id, self.fd, self.broken, self.failure = path, path.stem, fresh.fd, False, ""
        self.lock, self.size, self.spoken = fresh.lock, fresh.size, False
        if empty:  # left before anything was said (a /clear or /fork at once): nothing to resume there
            unlink(old_path)
        os.close(old)
        if old_lock is not None:
            old_lock.release()

    def leave(self) -> None:
        """The REPL is done with the file: closed, and removed when no one said anything in it (an
        empty `<stamp>-session` would otherwise be what `--resume last` picks)."""
        if self.spoken:
            self.close()
        else:
            self.discard()

    def write(self, record: dict) -> None:
        """Append one line, flushed to disk; raises SessionWriteError (once) when that fails."""
        if self.broken:
            return
        data = encode(record)
        length = len(data)
        try:
            while data:
                data = data[os.write(self.fd, data):]
            os.fsync(self.fd)
            self.size += length
            lost = self.lost()
        except OSError as exc:
            lost = f"cannot write session file {self.path}: {exc.strerror or exc}"
        if lost:
            self.broken, self.failure = True, lost
            raise SessionWriteError(lost)

    def lost(self) -> str:
        """Why the file at `path` is no longer the one being written (deleted, replaced, truncated), or ''."""
        mine = os.fstat(self.fd)
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            return f"session file {self.path} was deleted while the run was writing it"
        if (there.st_ino, there.st_dev) != (mine.st_ino, mine.st_dev):
            return f"session file {self.path} was replaced while the run was writing it"
        if mine.st_size != self.size:
            return (f"session file {self.path} was truncated or written by another process while the run "
                    f"was writing it ({mine.st_size} bytes, expected {self.size})")
        return ""

    def __call__(self, event: Event) -> None:
        """Record the event; never raises (a failed write is kept in `failure`)."""
        if isinstance(event, MessageAdded) and isinstance(event.message, AssistantMessage):
            self.answered = True
        if isinstance(event, MessageAdded) and isinstance(event.message, UserMessage):
            self.spoken = True
        if isinstance(event, RunEnd) and self.discard_unanswered and not self.answered \
                and event.status not in KEPT:
            self.discard()
            return
        record = self.record(event)
        if record is not None:
            try:
                self.write(record)
            except SessionWriteError:
                pass  # kept in self.failure; the loop asks `health` and stops the run

    def record(self, event: Event) -> dict | None:
        """The line an event adds to the session file, or None."""
        if isinstance(event, MessageAdded):
            return {"type": "message", "index": event.index, **to_record(event.message)}
        if isinstance(event, SessionStarted):
            return event.header
        if isinstance(event, Compacted):
            return {"type": "compacted", **asdict(event)}
        if isinstance(event, ContextEdit):
            return {"type": "edit", **asdict(event)}
        if isinstance(event, HookRan):  # what the user's hooks decided, for the record (the loader skips it)
            return {"type": "hook", **asdict(event), "time": now_iso()}
        if isinstance(event, CheckRan):  # the completion check's outcome, for the record (the loader skips it)
            return {"type": "check", **asdict(event), "time": now_iso()}
        if isinstance(event, Notice) and event.kind == "repair":
            return {"type": "repair", "text": event.text, "time": now_iso(),
                    **({"dropped": event.dropped} if event.dropped else {})}
        if isinstance(event, RunEnd):
            return {"type": "end", "status": event.status, "steps": event.steps,
                    "message": event.message, "time": now_iso(), "usage": asdict(event.usage),
                    **({"cost": event.cost} if event.cost is not None else {}),
                    **({"check": {"command": event.check.command, "passed": event.check.passed,
                                  "attempts": event.check.attempt}} if event.check is not None else {})}
        return None

    def discard(self) -> None:
        """Remove the file (a run that failed before any answer: nothing in it to resume)."""
        if not self.broken and not self.lost():
            try:
                os.unlink(self.path)
            except OSError:
                pass
        self.broken = True
        self.close()

    def rename(self, stem: str) -> None:
        """Give the file (and its lock) a new name in the same directory; kept when that name is taken."""
        path = self.path.with_name(stem + self.path.suffix)
        if self.broken or path.exists():
            return
        try:
            os.rename(self.path, path)
        except OSError:
            return  # the old name still works
        self.path, self.id = path, path.stem
        if self.lock is not None:
            self.lock.move(path)

    def close(self) -> None:
        """Close the file and give up its lock; once closed, again is nothing (the fd's number may be reused)."""
        if self.fd < 0:
            return
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.fd = -1
        if self.lock is not None:
            self.lock.release()
            self.lock = None
