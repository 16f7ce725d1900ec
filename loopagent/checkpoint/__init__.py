"""Checkpoints: shadow-git snapshots of the workspace before changes, with undo, redo, rewind and diff.

For the REPL: `Timeline.open(home, workspace)` then `.undo()`, `.redo()`, `.list()`,
`.diff_since(session_id)` and `.rewind(session_id, message_index)`.
"""

from loopagent.checkpoint.recorder import Recorder
from loopagent.checkpoint.shadow import CheckpointError, ShadowRepo
from loopagent.checkpoint.timeline import Checkpoint, NothingToDo, Snapshot, Timeline, checkpoints_dir

__all__ = [
    "Checkpoint", "CheckpointError", "NothingToDo", "Recorder", "ShadowRepo", "Snapshot", "Timeline",
    "checkpoints_dir",
]
