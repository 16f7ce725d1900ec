"""The checkpoint listener: a snapshot right before each call that may change files.

It hangs off `ToolStarted` (emitted after validation and policy, right before the call
runs) and skips read-only calls. Checkpoints fail soft: the first failure is reported
once and checkpoints stay off for the rest of the run; the run itself goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from loopagent.checkpoint.shadow import CheckpointError
from loopagent.checkpoint.timeline import Timeline
from loopagent.events import Event, MessageAdded, Notice, ToolCalled, ToolStarted


def stderr_warning(text: str) -> None:
    print(f"loop: {text}", file=sys.stderr, flush=True)


class Recorder:
    def __init__(self, timeline: Timeline, session: str = "", next_index: int = 0,
                 emit: Callable[[Event], None] | None = None, warn: Callable[[str], None] = stderr_warning):
        self.timeline = timeline
        self.session = session
        self.next_index = next_index  # the index of the message a checkpoint taken now precedes
        self.emit = emit
        self.warn = warn
        self.subjects: dict[str, str] = {}
        self.reported: set[str] = set()
        self.off = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, MessageAdded):
            self.next_index = event.index + 1
        elif isinstance(event, ToolCalled):
            self.subjects[event.call.id] = event.subject
        elif isinstance(event, ToolStarted) and not event.read_only and not self.off:
            subject = self.subjects.pop(event.call.id, "").split("\n", 1)[0]
            self.take(f"before {event.call.name} {subject}".strip())

    def take(self, label: str) -> None:
        try:
            snap = self.timeline.checkpoint(label, self.session, self.next_index)
        except (CheckpointError, OSError) as exc:
            self.off = True
            self.warn(f"checkpoints are off for this run: {exc}")
            return
        skipped = [p for p in snap.staged.too_big + snap.staged.nested if p not in self.reported]
        if skipped:
            self.reported.update(skipped)
            limit = self.timeline.repo.max_bytes
            shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
            self.warn(f"checkpoints leave out {shown} (nested git repositories, or files over {limit} bytes)")
        if snap.commit and self.emit is not None:
            self.emit(Notice("checkpoint", f"{snap.commit[:8]} {label}"))
