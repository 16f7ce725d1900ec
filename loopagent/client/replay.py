"""Model turns from a recording: the saved chunks of each turn, fed through the real assembler.

Recording format (JSON): {"turns": [{"chunks": [<chunk object>, ...]}, ...]}
where each chunk is the JSON of one SSE `data:` line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from loopagent.client import ModelError
from loopagent.client.assemble import TurnAssembler
from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message


class ReplayClient:
    def __init__(self, turns: list[list[dict]]):
        self.turns = turns
        self.position = 0

    @classmethod
    def load(cls, path: Path) -> ReplayClient:
        """Read a recording; raises ValueError with the file name when it is malformed."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            turns = [list(t["chunks"]) for t in data["turns"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"cannot read recording {path}: {exc}") from exc
        return cls(turns)

    def complete(
        self, messages: Sequence[Message], tools: list[dict], emit: Callable[[Event], None], cancel=None
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
