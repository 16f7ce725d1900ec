"""The checkpoint step: a snapshot right before each call that may change files.

The loop calls `before_change` (its explicit step, after validation and policy, right before a
call that is not read-only runs); the recorder only observes `MessageAdded` to know which message
a checkpoint precedes. Checkpoints fail soft: a snapshot that fails is reported (that one) and the
run goes on; the next change gets its checkpoint again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from loopagent.checkpoint.shadow import CheckpointError
from loopagent.checkpoint.timeline import Timeline
from loopagent.events import Event, MessageAdded, Notice
from loopagent.messages import ToolCall


def stderr_warning(text: str) -> None:
    print(f"loop: {text}", file=sys.stderr, flush=True)


class Recorder:
    def __init__(self, timeline: Timeline, session: str = "", next_index: int = 0,
                 emit: Callable[[Event], None] | None = None, warn: Callable[[str], None] | None = None):
        self.timeline = timeline
        self.session = session
        self.next_index = next_index  # the index of the message a checkpoint taken now precedes
        self.emit = emit
        # Warnings are events when there is a feed to send them to (shown on stderr by render/notes.py).
        self.warn = warn or ((lambda text: emit(Notice("warning", text))) if emit else stderr_warning)
        self.reported: set[str] = set()
        timeline.lock.on_wait = self.warn

    def __call__(self, event: Event) -> None:
        if isinstance(event, MessageAdded):
            self.next_index = event.index + 1

    def before_change(self, call: ToolCall, subject: str) -> None:
        """Snapshot the workspace before `call` runs (the loop's step before a mutating call)."""
        self.take(f"before {call.name} {subject.split(chr(10), 1)[0]}".strip())

    def take(self, label: str) -> None:
        try:
            snap = self.timeline.checkpoint(label, self.session, self.next_index)
        except (CheckpointError, OSError) as exc:
            self.warn(f"no checkpoint {label}: {exc}")
            return
        skipped = [p for p in snap.staged.too_big + snap.staged.nested if p not in self.reported]
        if skipped:
            self.reported.update(skipped)
            limit = self.timeline.repo.max_bytes
            shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
            self.warn(f"checkpoints leave out {shown} (nested git repositories, or files over {limit} bytes)")
        if snap.commit and self.emit is not None:
            self.emit(Notice("checkpoint", f"{snap.commit[:8]} {label}"))
