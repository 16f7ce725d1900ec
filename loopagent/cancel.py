"""The cancel token: one per turn, set once (Ctrl+C, SIGTERM, SIGHUP), read by everyone the turn reaches.

The loop, the model client, every tool and the approver get the same token. A part that
blocks (a stream, a subprocess, a terminal read) either polls `is_set()`, waits on it, selects
on `fileno()`, or registers `on_cancel(callback)` to unblock itself (kill the process, close
the stream). Thread-safe; never set from a signal handler directly (see run/interrupts.py),
so its lock can never be taken twice by one thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

CANCELLED = "cancelled by the user"


class Cancel:
    """Set once; `reason` says why, `signal` which signal did it (0: none, a plain set()), `status` how
    the run it stopped ends ("aborted"; "time_limit" when a `Deadline` set it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._pipe: tuple[int, int] | None = None
        self.reason = ""
        self.signal = 0
        self.status = "aborted"

    def set(self, reason: str = CANCELLED, signal: int = 0, status: str = "aborted") -> None:
        """Cancel: wake every waiter and run every callback once (a failing callback is ignored)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason, self.signal, self.status = reason, signal, status
            self._event.set()
            callbacks, self._callbacks = list(self._callbacks.values()), {}
            if self._pipe is not None:
                os.write(self._pipe[1], b"x")
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a stream already closed, a process already gone: nothing left to stop
                pass

    def said(self) -> str:
        """What a call this token stopped answers: "cancelled by the user", or the time limit's reason."""
        return self.reason if self.status == "time_limit" and self.reason else CANCELLED

    def clear(self) -> None:
        """Make the token usable again (a tool test reusing its context); a running turn never clears it."""
        with self._lock:
            self._event.clear()
            self.reason, self.signal, self.status = "", 0, "aborted"
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


class Deadline:
    """A run's wall-clock limit (--timeout). Once it passes, the run's token is set with status
    "time_limit": the stream, a running tool or the check stop as for Ctrl+C, and the run ends
    `time_limit`, not `aborted`. No limit (None): nothing is started."""

    def __init__(self, seconds: float | None, cancel: Cancel, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self.ends = None if seconds is None else clock() + seconds
        self._timer: threading.Timer | None = None
        if seconds is not None:
            self._timer = threading.Timer(seconds, lambda: cancel.set(self.reason(), status="time_limit"))
            self._timer.daemon = True
            self._timer.start()

    def reason(self) -> str:
        """Why the run stopped, for its `result` line."""
        return f"stopped at the time limit of {self.seconds:g} s (--timeout)"

    def passed(self) -> bool:
        """True once the limit is reached (checked before each request, besides the timer)."""
        return self.ends is not None and self.clock() >= self.ends

    def stop(self) -> None:
        """The run is over: the timer must not cancel anything after it."""
        if self._timer is not None:
            self._timer.cancel()
