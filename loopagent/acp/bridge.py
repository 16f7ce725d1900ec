"""Between the run's threads and the protocol's event loop: updates sent in order, and calls to the client
(a permission request, the editor's buffers) that a turn's cancel token ends at once.

A run's turn runs in a worker thread (its tools block); the connection lives on the asyncio loop. A
thread never touches the connection itself: it posts an update (`Outbox.post`) or waits for a call it
scheduled on the loop (`Bridge.call`), which its cancel token cuts short (DESIGN: `session/cancel` ends
the turn at any moment, a pending permission request included).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from loopagent.cancel import Cancel
from loopagent.errors import ToolError

T = TypeVar("T")
log = logging.getLogger("loop.acp")


class Cancelled(Exception):
    """The turn was cancelled while a call to the client was pending."""


class Bridge:
    """Calls onto the event loop from another thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop

    def call(self, make: Callable[[], Awaitable[T]], cancel: Cancel | None = None) -> T:
        """Run `make()` on the loop and wait for its result; raises Cancelled once `cancel` is set (the
        pending call is dropped: a late answer is ignored), or what the call raised."""
        future = asyncio.run_coroutine_threadsafe(make(), self.loop)  # type: ignore[arg-type]
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        forget = cancel.on_cancel(done.set) if cancel is not None else (lambda: None)
        try:
            done.wait()
        finally:
            forget()
        if cancel is not None and cancel.is_set():
            future.cancel()
            raise Cancelled()
        return future.result()


class Outbox:
    """A session's updates, sent one at a time in the order they were posted, from any thread."""

    def __init__(self, conn: Any, session_id: str, loop: asyncio.AbstractEventLoop, writer: Any = None):
        self.conn, self.session_id, self.loop, self.writer = conn, session_id, loop, writer
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task = loop.create_task(self.pump())

    def post(self, update: Any) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, update)

    async def flush(self) -> None:
        """Return once every update posted before this call has been sent (a response follows them)."""
        marker = self.loop.create_future()
        self.post(marker)
        await marker

    async def send_all(self, updates: list[Any]) -> None:
        """Many updates at once (a replayed session), after every update posted before: serialized as the SDK
        serializes them and written to the connection's stream in one go, where the SDK's sender would take a
        turn of the event loop for each (10,000 messages: seconds). Without the stream, posted one by one."""
        await self.flush()
        if self.writer is None:
            for update in updates:
                self.post(update)
            await self.flush()
            return
        import json

        from acp.utils import serialize_params

        lines = [json.dumps({"jsonrpc": "2.0", "method": "session/update",
                             "params": {"sessionId": self.session_id, "update": serialize_params(update)}},
                            separators=(",", ":")) for update in updates]
        self.writer.write(("\n".join(lines) + "\n").encode("utf-8") if lines else b"")
        await self.writer.drain()

    async def pump(self) -> None:
        """Send in order without waiting for each write: a task's first step queues its message with the
        connection's sender, and tasks start in the order they are made. A flush marker waits for all."""
        sending: list[asyncio.Task[Any]] = []
        while True:
            item = await self.queue.get()
            if isinstance(item, asyncio.Future):
                await self.settle(sending)
                if not item.done():
                    item.set_result(None)
                continue
            sending.append(self.loop.create_task(self.conn.session_update(session_id=self.session_id, update=item)))
            if len(sending) >= 256:
                await self.settle(sending)

    @staticmethod
    async def settle(sending: list[asyncio.Task[Any]]) -> None:
        for outcome in await asyncio.gather(*sending, return_exceptions=True):
            if isinstance(outcome, Exception):  # a client gone away: the turn still ends, its record is on disk
                log.warning("session/update not sent: %s", outcome)
        sending.clear()

    def close(self) -> None:
        self.task.cancel()


class ClientBuffers:
    """The editor's buffers as the workspace's `editor` (tools/workspace.py): what the file tools read and
    write when the client offers fs/read_text_file and fs/write_text_file. The workspace has confined and
    checked the path already; a read or write the client refuses is an error result for the model."""

    def __init__(self, bridge: Bridge, conn: Any, session_id: Callable[[], str],
                 cancel: Callable[[], Cancel | None], read: bool, write: bool):
        self.bridge, self.conn, self.session_id, self.cancel = bridge, conn, session_id, cancel
        self.can_read, self.can_write = read, write
        self.writes: dict[str, tuple[str | None, str]] = {}  # path -> (before, after) of the last write
        self.seen: dict[str, str] = {}  # path -> the text last read through the client

    def read(self, path: Path) -> bytes | None:
        """The buffer's text; None: the client does not read files, the disk's are read."""
        if not self.can_read:
            return None
        try:
            answer = self.bridge.call(lambda: self.conn.read_text_file(session_id=self.session_id(), path=str(path)),
                                      self.cancel())
        except Cancelled:
            raise ToolError("cancelled by the user") from None
        except Exception as exc:
            raise ToolError(f"the editor could not read {path}: {message_of(exc)}") from None
        self.seen[str(path)] = answer.content
        return answer.content.encode("utf-8")

    def write(self, path: Path, data: bytes) -> bool:
        """Write through the client (True); False: the client does not write files, the disk is written."""
        if not self.can_write:
            return False
        text = data.decode("utf-8", errors="replace")
        before = self.seen.get(str(path))
        try:
            self.bridge.call(lambda: self.conn.write_text_file(session_id=self.session_id(), path=str(path),
                                                               content=text), self.cancel())
        except Cancelled:
            raise ToolError("cancelled by the user") from None
        except Exception as exc:
            raise ToolError(f"the editor could not write {path}: {message_of(exc)}") from None
        self.writes[str(path)] = (before, text)
        self.seen[str(path)] = text
        return True


def message_of(exc: Exception) -> str:
    """A client's JSON-RPC error as one line."""
    data = getattr(exc, "data", None)
    text = str(exc) or type(exc).__name__
    if isinstance(data, dict) and data.get("details"):
        text += f" ({data['details']})"
    return " ".join(text.split())
