"""What the REPL uses of its run beyond the agent: the session file and the checkpoints.

The run that owns them fills this in (run/record.py); each part is None where the run has none (a REPL
built bare in a test, checkpoints off), and the command that needs it says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopagent.messages import Message


@dataclass(frozen=True)
class Services:
    sessions: Callable[[int | None], list[str]] | None = None  # this workspace's sessions, a screen row each
    fork_session: Callable[[list[Message]], None] | None = None  # continue in a new file holding this history
    session_path: Callable[[], Path] | None = None  # the file written now (a fork changes it)
    leave_session: Callable[[], None] | None = None  # on leaving: a session in which nothing was said goes
    checkpoints: Any = None  # run/record.py's CheckpointCommands: lines, diff, timeline
