"""Model turns from a recording, no server: saved stream chunks, or a saved session's assistant messages.

Chunk recording format (JSON): {"turns": [{"chunks": [<chunk object>, ...]}, ...]}
where each chunk is the JSON of one SSE `data:` line; they are fed through the real assembler.
A session file (JSONL whose first line is its header, see loopagent/session/) gives its assistant
messages, in order, as the model's turns: `loop agent --replay SESSION_FILE` and `loop replay`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loopagent.client import Cancelled, ModelError
from loopagent.client.assemble import TurnAssembler
from loopagent.events import Event, TextDelta, ThinkingDelta
from loopagent.messages import AssistantMessage, Message

if TYPE_CHECKING:
    from loopagent.cancel import Cancel
    from loopagent.tools.spec import ToolSpec

SUMMARY = "(summary of the earlier conversation, not recorded in the session)"


class ReplayClient:
    def __init__(self, turns: list[list[dict]]):
        self.turns = turns
        self.position = 0

    @classmethod
    def load(cls, path: Path) -> ReplayClient | SessionTurns:
        """Read a recording or a session file; raises ValueError with the file name when it is malformed."""
        if is_session(Path(path)):
            return SessionTurns.load(Path(path))
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            turns = [list(t["chunks"]) for t in data["turns"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"cannot read recording {path}: {exc}") from exc
        return cls(turns)

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], emit: Callable[[Event], None], cancel: Cancel
    ) -> AssistantMessage:
        """The next recorded turn, its chunks fed through the same assembler as a live stream."""
        if self.position >= len(self.turns):
            raise ModelError(f"the recording has no turn {self.position + 1}; it holds {len(self.turns)}")
        chunks = self.turns[self.position]
        self.position += 1
        turn = TurnAssembler()
        for chunk in chunks:
            for event in turn.feed(chunk):
                emit(event)
        return turn.finish()


def is_session(path: Path) -> bool:
    """Whether `path` is a session file: its first line is a session header."""
    from loopagent.session.catalog import read_header

    return bool(read_header(path))


class SessionTurns:
    """The assistant messages of a saved session, answered in order; a request without tools (a
    compaction) gets the session's recorded summary and uses no turn."""

    def __init__(self, turns: list[AssistantMessage], summaries: list[str] | None = None, source: str = "session"):
        self.turns = turns
        self.summaries = list(summaries or [])
        self.source = source
        self.position = 0

    @classmethod
    def load(cls, path: Path) -> SessionTurns:
        """The turns of session file `path`; raises ValueError naming the file when it cannot be read."""
        from loopagent.session import SessionError, load

        try:
            loaded = load(path)
        except SessionError as exc:
            raise ValueError(str(exc)) from None
        return cls.of(loaded)

    @classmethod
    def of(cls, loaded) -> SessionTurns:
        """The turns of a loaded session (a `loopagent.session.Loaded`): its own message objects."""
        turns = [m for m in loaded.history if isinstance(m, AssistantMessage)]
        return cls(turns, [c.summary for c in loaded.compacted], f"session {loaded.id}")

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], emit: Callable[[Event], None],
                 cancel: Cancel) -> AssistantMessage:
        """The next recorded assistant message, its thinking and text emitted as a stream would."""
        if cancel.is_set():
            raise Cancelled(AssistantMessage(stop_reason="incomplete"))
        if not tools:
            return AssistantMessage(text=self.summaries.pop(0) if self.summaries else SUMMARY)
        if self.position >= len(self.turns):
            raise ModelError(f"the {self.source} has no turn {self.position + 1}; it holds {len(self.turns)}")
        message = self.turns[self.position]
        self.position += 1
        if message.thinking:
            emit(ThinkingDelta(message.thinking))
        if message.text:
            emit(TextDelta(message.text))
        return message
