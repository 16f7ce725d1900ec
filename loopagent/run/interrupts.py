"""Signals at the rim: SIGINT, SIGTERM and SIGHUP set the running turn's cancel token.

The handler itself only writes the signal number into a pipe (nothing that takes a lock can
run inside a signal handler safely); a watcher thread reads it and sets the token. The main
thread is never interrupted by an exception while a turn runs: whatever blocks there (a tool
batch, an approval question) watches the token. Outside a turn SIGINT is a KeyboardInterrupt
and SIGTERM/SIGHUP raise `Stopped`; once the REPL calls `hold()`, a SIGINT outside a turn is only
counted (`take_held`): a Ctrl+C that lands between two prompts (a turn just ended) must not end the
REPL from wherever the main thread happens to be.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from loopagent.cancel import CANCELLED, Cancel

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
REASONS = {signal.SIGINT: CANCELLED, signal.SIGTERM: "stopped by SIGTERM", signal.SIGHUP: "stopped by SIGHUP"}
_QUIT = 0  # what __exit__ writes to end the watcher


class Stopped(BaseException):
    """SIGTERM or SIGHUP arrived while no turn was running; the process should exit 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


class Trap:
    """While entered (main thread only), stopping signals cancel the current turn instead of raising."""

    def __init__(self) -> None:
        self.current: Cancel | None = None
        self.received: list[int] = []  # stopping signals in order of arrival
        self.holding = False  # SIGINT outside a turn: counted in `held` instead of raised (the REPL)
        self.held: deque[int] = deque()  # one entry per held SIGINT (appended by the handler and the watcher)
        self._saved: dict[int, object] = {}
        self._pipe: tuple[int, int] | None = None
        self._watcher: threading.Thread | None = None

    def stopping(self) -> int | None:
        """The SIGTERM or SIGHUP that means the whole process must end (not just a turn), if one came."""
        return next((s for s in self.received if s != signal.SIGINT), None)

    def hold(self) -> None:
        """From now on a SIGINT outside a turn is counted, not raised; installed again, since a prompt
        (prompt-toolkit's asyncio loop) puts Python's default handler back when it ends."""
        self.holding = True
        self._install()

    def take_held(self) -> int:
        """How many SIGINTs arrived outside a turn since the last call."""
        count = 0
        while self.held:
            self.held.popleft()
            count += 1
        return count

    def __enter__(self) -> Trap:
        self._pipe = os.pipe()
        self._watcher = threading.Thread(target=self._watch, name="loop-signals", daemon=True)
        self._watcher.start()
        self._install()
        return self

    def _install(self) -> None:
        for signum in SIGNALS:
            old = signal.signal(signum, self._handle)
            self._saved.setdefault(signum, old)

    def __exit__(self, *exc: object) -> None:
        for signum, old in self._saved.items():
            signal.signal(signum, old)  # type: ignore[arg-type]
        self._saved.clear()
        assert self._pipe is not None and self._watcher is not None
        os.write(self._pipe[1], bytes([_QUIT]))
        self._watcher.join(timeout=5)
        for fd in self._pipe:
            os.close(fd)
        self._pipe = None

    @contextmanager
    def turn(self) -> Iterator[Cancel]:
        """A fresh token for one turn, set by the signals that arrive while it runs."""
        token = Cancel()
        self._install()  # again: a prompt in between (prompt-toolkit, asyncio) may have replaced SIGINT's
        self.current = token
        try:
            yield token
        finally:
            self.current = None

    def _handle(self, signum: int, frame: object) -> None:
        self.received.append(signum)
        if self.current is None:
            if signum == signal.SIGINT and self.holding:
                self.held.append(signum)
                return
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Stopped(signum)
        assert self._pipe is not None
        os.write(self._pipe[1], bytes([signum]))

    def _watch(self) -> None:
        assert self._pipe is not None
        fd = self._pipe[0]
        while True:
            data = os.read(fd, 64)
            for signum in data:
                if signum == _QUIT:
                    return
                token = self.current
                if token is not None:
                    token.set(REASONS.get(signum, CANCELLED), signum)
                elif signum == signal.SIGINT and self.holding:  # the turn ended before this one was read
                    self.held.append(signum)
