"""The live area: the bottom rows of the screen, redrawn in place while a turn runs (the open block
of the answer, a spinner with elapsed seconds, queued messages), and erased before anything is
printed above it.

It follows the terminal's size: each redraw reads the size of the terminal it writes to, so a
resize mid-stream is drawn at the new width. A terminal that narrows rewraps (reflows) the rows
already drawn, as tmux, VTE, iTerm2, kitty and Windows Terminal do; the erase then counts the rows
each old row has become, so no fragment of an old frame stays on the screen.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from loopagent.render.safe import printable

HIDE, SHOW, ERASE_DOWN = "\x1b[?25l", "\x1b[?25h", "\x1b[J"
# The one live area of the process: other writers to the terminal (stderr notes) step around it.
ACTIVE: list[LiveArea] = []


class Activity:
    """A spinner line with elapsed seconds, redrawn by the live area's timer."""

    def __init__(self, label: str, clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.clock = clock
        self.started = clock()
        self.spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console, options):
        elapsed = self.clock() - self.started
        self.spinner.update(text=Text(f"{self.label} {elapsed:.0f}s", style="dim"))
        yield self.spinner


def terminal_size(out: IO[str]) -> os.terminal_size | None:
    """The size of the terminal `out` writes to, None when it is not one."""
    try:
        return os.get_terminal_size(out.fileno())
    except (AttributeError, OSError, ValueError):
        return None


def follow_size(console: Console, out: IO[str]) -> None:
    """Make `console` lay out for the terminal's current size (a COLUMNS read at start goes stale)."""
    size = terminal_size(out)
    if size is not None and size.columns > 0 and (console.width, console.height) != (size.columns, size.lines):
        console.size = (size.columns, max(size.lines, 3))


def rows_after_resize(lengths: list[int], width: int) -> int:
    """Screen rows that rows of these cell lengths take once the terminal rewraps them to `width`."""
    return sum(max(1, -(-length // max(width, 1))) for length in lengths)


class LiveArea:
    """Rows at the bottom of the screen redrawn from `view` on a timer; `printing()` steps aside."""

    def __init__(self, console: Console, out: IO[str], view: Callable[[], RenderableType], fps: float = 10):
        self.console, self.out, self.view = console, out, view
        self.period = 1 / fps
        self.lock = threading.RLock()
        self.lengths: list[int] = []  # cell length of each row on the screen now
        self.drawn_width = 0
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Draw now and keep redrawing until `stop`."""
        with self.lock:
            if self.thread is not None:
                return
            ACTIVE.append(self)
            self.out.write(HIDE)
            self.draw()
            self.stopping.clear()
            self.thread = threading.Thread(target=self._tick, daemon=True, name="loop-live")
            self.thread.start()

    def stop(self) -> None:
        """Erase the rows and give the terminal back (cursor shown)."""
        thread = self.thread
        if thread is None:
            return
        self.stopping.set()
        thread.join(timeout=2)
        with self.lock:
            self.thread = None
            self.out.write(self.erase() + SHOW)
            self.out.flush()
            if self in ACTIVE:
                ACTIVE.remove(self)

    @contextmanager
    def printing(self) -> Iterator[None]:
        """Erase the rows, let the caller print above where they were, then draw them again."""
        with self.lock:
            self.out.write(self.erase())
            self.out.flush()
            try:
                yield
            finally:
                self.draw()

    def refresh(self) -> None:
        with self.lock:
            self.draw()

    def _tick(self) -> None:
        while not self.stopping.wait(self.period):
            self.refresh()

    def erase(self) -> str:
        """Control codes that take the cursor to the first row of the area and clear to the end of the screen."""
        if not self.lengths:
            return ""
        size = terminal_size(self.out)
        width = size.columns if size is not None else self.drawn_width
        height = len(self.lengths) if width == self.drawn_width else rows_after_resize(self.lengths, width)
        self.lengths = []
        return f"\r\x1b[{height}A{ERASE_DOWN}"

    def draw(self) -> None:
        """Erase the old frame and write a new one at the terminal's current width, in one write."""
        erase = self.erase()
        follow_size(self.console, self.out)
        console = self.console
        options = console.options.update(height=None)
        lines = console.render_lines(self.view(), options, pad=False)
        # Only the newest rows fit: a live area taller than the screen cannot be redrawn in place.
        lines = lines[-max(3, console.height - 2):]
        self.lengths = [Segment.get_line_length(line) for line in lines]
        self.drawn_width = console.width
        self.out.write(erase + "".join(encoded(console, line) + "\n" for line in lines))
        self.out.flush()


def encoded(console: Console, line: list[Segment]) -> str:
    """One row as terminal text: each segment escaped, styled for the console's colour system (Rich keeps
    the detected system in `_color_system`; its public `color_system` is only the name)."""
    out = []
    for seg in line:
        if seg.control:
            continue
        text = printable(seg.text)
        style = seg.style
        out.append(style.render(text, color_system=console._color_system) if style and console._color_system
                   else text)
    return "".join(out)


@contextmanager
def around() -> Iterator[None]:
    """Step around the live area, if one is drawn, to write to the terminal (a note on stderr)."""
    if not ACTIVE:
        yield
        return
    with ACTIVE[-1].printing():
        yield
