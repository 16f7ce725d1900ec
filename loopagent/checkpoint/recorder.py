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
from loopagent.events import Event, MessageAdded, Notice, ToolFinished
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
        self.running: tuple[str, str] | None = None  # (call id, what it is) of the call snapshotted last
        timeline.lock.on_wait = self.warn

    def __call__(self, event: Event) -> None:
        if isinstance(event, MessageAdded):
            self.next_index = event.index + 1
        elif isinstance(event, ToolFinished) and self.running and event.call.id == self.running[0]:
            self.finished(self.running[1])

    def before_change(self, call: ToolCall, subject: str) -> None:
        """Snapshot the workspace before `call` runs (the loop's step before a mutating call)."""
        what = f"{call.name} {subject.split(chr(10), 1)[0]}".strip()
        self.running = None
        if self.take(f"before {what}"):
            self.running = (call.id, what)

    def finished(self, what: str) -> None:
        """Note the files as the call left them (calls that change files run one at a time), so that an undo
        can tell the person's own later changes from the call's. A failure only makes more of them count as
        the person's (an undo asks about those): nothing to warn about."""
        self.running = None
        try:
            self.timeline.after(f"after {what}", self.session)
        except (CheckpointError, OSError):
            return

    def take(self, label: str) -> bool:
        """Snapshot now; False (after a warning) when that failed."""
        try:
            snap = self.timeline.checkpoint(label, self.session, self.next_index)
        except (CheckpointError, OSError) as exc:
            self.warn(f"no checkpoint {label}: {exc}")
            return False
        skipped = [p for p in snap.staged.too_big + snap.staged.nested if p not in self.reported]
        if skipped:
            self.reported.update(skipped)
            limit = self.timeline.repo.max_bytes
            shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
            self.warn(f"checkpoints leave out {shown} (nested git repositories, or files over {limit} bytes)")
        if snap.commit and self.emit is not None:
            self.emit(Notice("checkpoint", f"{snap.commit[:8]} {label}"))
        return True
