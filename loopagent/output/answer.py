"""`-o FILE`: the run's final answer written to a file, for a script that wants it without parsing a stream."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from loopagent.events import AssistantDone, Event, RunEnd

WRITTEN = ("completed", "check_failed")  # ends with a final answer to keep


class AnswerFile:
    """Listener: at the run's end, its final answer (with --output-schema, the valid JSON) into `path`.

    Written whole or not at all (a temporary file renamed over it), so a reader never sees half an answer.
    A run that ended without one (a limit, an error, output_invalid) leaves the file as it was."""

    def __init__(self, path: Path):
        self.path = path
        self.answer: str | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, AssistantDone) and not event.message.tool_calls:
            self.answer = event.message.text
        elif isinstance(event, RunEnd) and event.status in WRITTEN:
            if event.output is not None:
                self.write(json.dumps(event.output.value, ensure_ascii=False, indent=2) + "\n")
            elif self.answer is not None:
                self.write(self.answer if self.answer.endswith("\n") else self.answer + "\n")

    def write(self, text: str) -> None:
        """Replace the file's content with `text`; a failure is one line on stderr (the run's outcome stands)."""
        import sys

        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, self.path)
        except OSError as exc:
            print(f"loop: cannot write {self.path}: {exc.strerror or exc}", file=sys.stderr)
