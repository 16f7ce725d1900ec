"""What watches one model request: the idle deadline, and the hang-up that cancellation uses."""

from __future__ import annotations

import socket
from collections.abc import Callable
from contextlib import suppress
from typing import Any


class Idle:
    """A deadline that moves only when the turn makes progress, not when bytes arrive.

    httpx's read timeout never fires against a server that sends `: keep-alive` comments or
    empty deltas forever; this one does. Until the first progress the deadline is `first` when that
    is longer: a slow local server can spend minutes on a long prompt, sending only keep-alives.
    """

    def __init__(self, seconds: float, clock: Callable[[], float], first: float = 0.0):
        self.seconds, self.clock, self.first = seconds, clock, first
        self.since, self.seen = clock(), 0

    def limit(self) -> float:
        """The deadline in force: the first-token allowance until the turn has made progress."""
        return self.seconds if self.seen else max(self.seconds, self.first)

    def expired(self, progress: int) -> bool:
        """True once `progress` (a counter) has not moved for longer than the deadline."""
        now = self.clock()
        if progress != self.seen:
            self.seen, self.since = progress, now
            return False
        return now - self.since > self.limit()

    def message(self, comments: int) -> str:
        sent = f"{comments} keep-alive comment{'s' if comments != 1 else ''} and " if comments else ""
        if not self.seen and self.first > self.seconds:
            return (f"the model sent no first token for {self.first:g} s (only {sent}empty chunks); the turn "
                    "was abandoned. If the server is this slow, raise first_token_timeout "
                    "(LOOP_FIRST_TOKEN_TIMEOUT)")
        return (f"the model sent no text, thinking or tool call for {self.seconds:g} s (only {sent}empty "
                "chunks); the turn was abandoned. If the server is this slow, raise read_timeout "
                "(LOOP_READ_TIMEOUT)")


class Hangup:
    """Ends one request's connection from any thread or a signal handler.

    Shutting the socket down wakes a read blocked on it (closing it from elsewhere would not), so
    the reading thread sees the stream end at once and can ask whether it was cancelled.
    """

    def __init__(self, remember: Callable[[Any], None], last: Any = None):
        # A connection reused from the pool has no connect event: until the response arrives,
        # the one that served the last response is the one being waited on.
        self.stream, self.remember, self.finished = last, remember, False

    def trace(self, name: str, info: dict) -> None:
        """httpx's trace extension: keep the network stream as soon as it is connected."""
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self.stream = info.get("return_value") or self.stream

    def answered(self, response: Any) -> None:
        stream = response.extensions.get("network_stream")
        if stream is not None:
            self.stream = stream
            self.remember(stream)

    def hang_up(self) -> None:
        """Shut the connection down; a no-op once the request is over."""
        stream = self.stream
        if self.finished or stream is None:
            return
        with suppress(Exception):  # already closed, or a transport without a socket
            stream.get_extra_info("socket").shutdown(socket.SHUT_RDWR)

    def done(self) -> None:
        """The request is over: a callback that fires later must not touch a pooled connection."""
        self.finished, self.stream = True, None

