"""The session writer: a listener that appends one JSON line per message, durably.

Each line is written with one O_APPEND write, then fsynced, so a crash loses at most
the line being written and the cost of a line never depends on the session's length.
The file is never rewritten; the only exception is a repair that cuts off a torn last line.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from loopagent import __version__
from loopagent.events import Compacted, Event, MessageAdded, RunEnd
from loopagent.messages import to_record
from loopagent.secrets import public_url
from loopagent.session.catalog import SessionError

SCHEMA = 1


class SessionWriteError(SessionError):
    """A session line could not be written; the run must stop (exit 1)."""


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
    """Listener: MessageAdded -> a `message` line, Compacted -> `compacted`, RunEnd -> `end`."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self.id = path.stem
        self.fd = fd
        self.broken = False

    @classmethod
    def create(cls, path: Path, head: dict) -> SessionWriter:
        """Start a new session file with its header line; refuses to overwrite an existing file."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise SessionWriteError(f"cannot create session file {path}: {exc.strerror or exc}") from None
        writer = cls(path, fd)
        try:
            writer.write(head)
        except SessionWriteError:
            writer.close()
            raise
        return writer

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

    def switch(self, path: Path, head: dict, history: list) -> None:
        """Continue in a new file that starts with `history` (a /clear or a rewound conversation)."""
        old = self.fd
        fresh = SessionWriter.create(path, head)
        self.path, self.id, self.fd, self.broken = path, path.stem, fresh.fd, False
        os.close(old)
        for index, message in enumerate(history):
            self.write({"type": "message", "index": index, **to_record(message)})

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
            raise SessionWriteError(f"cannot write session file {self.path}: {exc.strerror or exc}") from None

    def repair(self, text: str, **extra: object) -> None:
        """Record a repair made while resuming."""
        self.write({"type": "repair", "text": text, "time": now_iso(), **extra})

    def __call__(self, event: Event) -> None:
        if isinstance(event, MessageAdded):
            self.write({"type": "message", "index": event.index, **to_record(event.message)})
        elif isinstance(event, Compacted):
            self.write({"type": "compacted", **asdict(event)})
        elif isinstance(event, RunEnd):
            self.write({"type": "end", "status": event.status, "steps": event.steps,
                        "message": event.message, "time": now_iso()})

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
