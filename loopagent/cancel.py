"""The cancel token: one per turn, set once (Ctrl+C, SIGTERM, SIGHUP), read by everyone the turn reaches.

The loop, the model client, every tool and the approver get the same token. A part that
blocks (a stream, a subprocess, a terminal read) either polls `is_set()`, waits on it, selects
on `fileno()`, or registers `on_cancel(callback)` to unblock itself (kill the process, close
the stream). Thread-safe; never set from a signal handler directly (see cli/interrupts.py),
so its lock can never be taken twice by one thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

CANCELLED = "cancelled by the user"


class Cancel:
    """Set once; `reason` says why, `signal` which signal did it (0: none, a plain set())."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._pipe: tuple[int, int] | None = None
        self.reason = ""
        self.signal = 0

    def set(self, reason: str = CANCELLED, signal: int = 0) -> None:
        """Cancel: wake every waiter and run every callback once (a failing callback is ignored)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason, self.signal = reason, signal
            self._event.set()
            callbacks, self._callbacks = list(self._callbacks.values()), {}
            if self._pipe is not None:
                os.write(self._pipe[1], b"x")
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a stream already closed, a process already gone: nothing left to stop
                pass

    def clear(self) -> None:
        """Make the token usable again (a tool test reusing its context); a running turn never clears it."""
        with self._lock:
            self._event.clear()
            self.reason, self.signal = "", 0
            if self._pipe is not None:
                for fd in self._pipe:
                    os.close(fd)
                self._pipe = None

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once cancelled; False when `timeout` passed first."""
        return self._event.wait(timeout)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` when cancelled (at once if already); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                key, self._next = self._next, self._next + 1
                self._callbacks[key] = callback
                return lambda: self._forget(key)
        callback()
        return lambda: None

    def _forget(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)

    def fileno(self) -> int:
        """A descriptor that turns readable once cancelled, for select() next to a terminal or a pipe."""
        with self._lock:
            if self._pipe is None:
                self._pipe = os.pipe()
                if self._event.is_set():
                    os.write(self._pipe[1], b"x")
            return self._pipe[0]

    def __del__(self) -> None:
        pipe, self._pipe = getattr(self, "_pipe", None), None
        for fd in pipe or ():
            try:
                os.close(fd)
            except OSError:
                pass
