"""Diagnostics on stderr: the listener that shows repairs, warnings, notes and a run's error.

They are not part of the answer, and stdout may be a JSON stream that must hold nothing else,
so they go to stderr, one line each, escaped for the terminal. When a live area is drawn (colour mode)
it is erased for the line and drawn again below it, so a retry notice does not break the screen.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import IO

from loopagent.events import STDERR_KINDS, Event, Notice, RunEnd
from loopagent.render.safe import printable


class StderrNotes:
    """Listener: a diagnostic Notice -> one line on stderr; a RunEnd of status `error` -> its message."""

    def __init__(self, err: IO[str] | None = None):
        self.err = err

    def __call__(self, event: Event) -> None:
        if isinstance(event, Notice) and event.kind in STDERR_KINDS:
            prefix = {"repair": "repair: ", "note": "loop: note: "}.get(event.kind, "loop: ")
            self.line(prefix + event.text)
        elif isinstance(event, RunEnd) and event.status == "error" and event.message:
            self.line(f"loop: {event.message}")

    def line(self, text: str) -> None:
        out = self.err or sys.stderr  # looked up late: a test or a pty may have replaced it
        live = sys.modules.get("loopagent.render.live")  # not imported: no live area (and no Rich import)
        with live.around() if live is not None else nullcontext():
            # stderr is often the screen a live area is drawn on (stdout): step around it
            out.write(printable(text) + "\n")
            out.flush()
