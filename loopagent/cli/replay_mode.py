"""What `loop replay` refuses, and the approval mode a replay runs under: shared by the command
(replay_cmd.py) and the run inside it (replay_run.py), so neither imports the other."""

from __future__ import annotations

from typing import Any


class Refused(Exception):
    """A SESSION or DIR that cannot be replayed: one line on stderr, exit 2."""


def mode_for(source: Any, configured: str) -> tuple[str | None, str]:
    """The approval mode the replay runs under (None: the configuration's) and a note for stderr ('' none)."""
    from loopagent.policy import STRICTNESS  # loosest first

    recorded = approval_of(source.loaded.header)
    if source.approval is not None:
        return source.approval, ""
    if source.own or recorded is None:
        return recorded, ""
    if STRICTNESS.index(recorded) >= STRICTNESS.index(configured):  # as strict as the user's, or stricter
        return recorded, ""
    return configured, (f"loop: {source.loaded.path} is not one of your saved sessions: its calls run under your "
                        f"approval mode {configured}, not its recorded {recorded}; give --approval {recorded} to "
                        "run them as recorded")


def approval_of(header: dict) -> str | None:
    """The approval mode the session recorded, or None (then the configuration decides)."""
    from loopagent.policy import MODES

    mode = header.get("approval")
    return mode if mode in MODES else None


def sink():
    """Where the replay's own JSON lines go: nowhere a person looks (the table is the output)."""
    import io

    return io.StringIO()
