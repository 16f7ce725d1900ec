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
from loopagent.errors import SessionError, SessionWriteError  # noqa: F401 (the error tree; importable from here)
from loopagent.events import Compacted, ContextEdit, Event, MessageAdded, Notice, RunEnd, SessionStarted
from loopagent.messages import to_record
from loopagent.secrets import public_url

SCHEMA = 1


def now_iso() -> str:
    """UTC now, ISO 8601 with microseconds and a Z."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def header(session_id: str, workspace: Path, model: str, base_url: str, task: str) -> dict:
    """The first line of a session file. Never holds the API key."""
    return {
        "type": "header", "schema": SCHEMA, "id": session_id, "workspace": os.path.realpath(workspace),
        "model": model, "base_url": public_url(base_url), "created": now_iso(),
        "loop_version": __version__, "task": task[:500],
    }


def encode(record: dict) -> bytes:
    """One compact JSON line (the listing counts `"role":"assistant"` in this exact form)."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class SessionWriter:
    """Listener: SessionStarted -> its `header`, MessageAdded -> a `message` line, Compacted -> `compacted`,
    ContextEdit -> `edit`, a repair Notice -> `repair`, RunEnd -> `end`."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self.id = path.stem
        self.fd = fd
        self.broken = False
        self.failure = ""  # why the last write failed: the run must stop (see `health`)

    @classmethod
    def create(cls, path: Path, head: dict | None = None) -> SessionWriter:
        """Start a new session file; refuses to overwrite an existing file. Its header line comes with
        the SessionStarted event, or is written now when `head` is given (a file written without a feed)."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise SessionWriteError(f"cannot create session file {path}: {exc.strerror or exc}") from None
        writer = cls(path, fd)
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
    def reopen(cls, path: Path, valid_size: int) -> SessionWriter:
        """Continue an existing file after its first `valid_size` bytes (a torn tail is cut off)."""
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
            raise SessionWriteError(f"cannot append to session file {path}: {exc.strerror or exc}") from None
        return cls(path, fd)

    def switch(self, path: Path) -> None:
        """Continue in a new, empty file (a /clear or a rewound conversation); its header and messages
        follow as events (SessionStarted, then MessageAdded for each message it starts with)."""
        old = self.fd
        fresh = SessionWriter.create(path)
        self.path, self.id, self.fd, self.broken, self.failure = path, path.stem, fresh.fd, False, ""
        os.close(old)

    def write(self, record: dict) -> None:
        """Append one line, flushed to disk; raises SessionWriteError (once) when that fails."""
        if self.broken:
            return
        data = encode(record)
        try:
            while data:
                data = data[os.write(self.fd, data):]
            os.fsync(self.fd)
        except OSError as exc:
            self.broken = True
            self.failure = f"cannot write session file {self.path}: {exc.strerror or exc}"
            raise SessionWriteError(f"cannot write session file {self.path}: {exc.strerror or exc}") from None

    def __call__(self, event: Event) -> None:
        """Record the event; never raises (a failed write is kept in `failure`)."""
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
        if isinstance(event, Notice) and event.kind == "repair":
            return {"type": "repair", "text": event.text, "time": now_iso(),
                    **({"dropped": event.dropped} if event.dropped else {})}
        if isinstance(event, RunEnd):
            return {"type": "end", "status": event.status, "steps": event.steps,
                    "message": event.message, "time": now_iso()}
        return None

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
