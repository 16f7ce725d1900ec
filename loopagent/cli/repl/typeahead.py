"""What a person types while a turn runs: read without echo into a queue, delivered when the turn ends.

The terminal is switched to non-canonical input without echo (ISIG stays, so Ctrl+C still
cancels the turn). Enter queues the line; Ctrl+D queues `/exit` (the REPL leaves when the turn
ends). Keys still unread when reading stops (the turn ended, or an approval question takes the
terminal) are read into the queue first: a key typed ahead never answers a question the person
has not seen yet, and a Ctrl+D typed just before the `done:` line is not lost.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

EXIT = "/exit"  # what Ctrl+D typed during a turn queues


class TypeAhead:
    """Reads what is typed while a turn runs (no echo, Ctrl+C still interrupts) into a queue."""

    def __init__(self, renderer: Any, fd: int | None = None):
        self.renderer = renderer
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.queue: list[str] = []
        self.typing = ""
        self.lock = threading.Lock()
        self.saved: list[Any] | None = None
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()

    def start(self) -> None:
        if not os.isatty(self.fd) or self.thread is not None:
            return
        self.saved = termios.tcgetattr(self.fd)
        quiet = termios.tcgetattr(self.fd)
        quiet[3] &= ~(termios.ICANON | termios.ECHO)  # ISIG stays: Ctrl+C still sends SIGINT
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        self.stopping.clear()
        self.thread = threading.Thread(target=self._read, name="loop-typeahead", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Stop reading; what was typed and not yet read joins the queue (or the line being typed)."""
        if self.thread is None:
            return
        self.stopping.set()
        self.thread.join(timeout=2)
        self.thread = None
        self._drain()
        if self.saved is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self.saved)
            self.saved = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Normal line input for a moment (an approval question)."""
        running = self.thread is not None
        self.stop()
        try:
            yield
        finally:
            if running:
                self.start()

    def take(self) -> list[str]:
        """The queued lines, oldest first; the queue (and its display) is empty afterwards."""
        with self.lock:
            taken, self.queue = self.queue, []
        self.renderer.set_queued([])
        return taken

    def _read(self) -> None:
        while not self.stopping.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                self._keys(os.read(self.fd, 1024).decode("utf-8", errors="replace"))

    def _drain(self) -> None:
        while select.select([self.fd], [], [], 0)[0]:
            data = os.read(self.fd, 1024)
            if not data:
                return
            self._keys(data.decode("utf-8", errors="replace"))

    def _keys(self, keys: str) -> None:
        if "\x1b" in keys:  # arrow keys and other escape sequences: no line editing here
            return
        for key in keys:
            if key in "\r\n":
                text, self.typing = self.typing.strip(), ""
                if text:
                    self._queue(text)
            elif key == "\x04":  # Ctrl+D: leave when the turn ends
                self._queue(EXIT)
            elif key in "\x7f\b":
                self.typing = self.typing[:-1]
            elif key == "\x15":  # Ctrl+U
                self.typing = ""
            elif key.isprintable():
                self.typing += key
        self.renderer.typing = self.typing

    def _queue(self, text: str) -> None:
        with self.lock:
            self.queue.append(text)
            shown = list(self.queue)
        self.renderer.set_queued(shown)


class PausingApprover:
    """An approver whose question is asked with normal line input (the type-ahead pauses)."""

    def __init__(self, inner: Any, typeahead: TypeAhead):
        self.inner, self.typeahead = inner, typeahead

    def approve(self, *args: Any, **kwargs: Any) -> bool:
        with self.typeahead.paused():
            return self.inner.approve(*args, **kwargs)
