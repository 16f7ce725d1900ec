"""The view: the messages sent for a history, with its stubs, clips and compaction summary applied.

The history is never changed (the session file keeps everything). Every edit is keyed by the
identity of the message it changes, never by its index: when a history is cut (/rewind) or
cleared (/clear) and then grows again, the new messages cannot inherit the edits of the ones
that are gone, because an edit is only ever found through the very object it was made for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from loopagent.context.estimate import estimate_tokens
from loopagent.context.prune import clip_text, is_kept
from loopagent.errors import BrokenHistory
from loopagent.guards import is_nudge
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, UserMessage

RESENT_HEADER = "[Skills you loaded earlier in this conversation, sent again after the context was compacted.]"
SUMMARY_HEADER = "[Summary of the earlier conversation, written by you when the context was compacted. " \
                 "The full transcript is in the session file; the most recent turns follow verbatim.]"

T = TypeVar("T")


class Edits(Generic[T]):
    """Values attached to messages by identity. Messages are frozen values that compare equal when
    their fields are (two results of `ls` in two turns), so neither `==` nor a hash would do; each
    entry holds its message, so that the message's id cannot be reused by another object."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[Message, T]] = {}

    def get(self, msg: Message) -> T | None:
        """The value attached to this very message, or None."""
        hit = self._items.get(id(msg))
        return hit[1] if hit is not None and hit[0] is msg else None

    def __setitem__(self, msg: Message, value: T) -> None:
        self._items[id(msg)] = (msg, value)

    def __contains__(self, msg: Message) -> bool:
        return self.get(msg) is not None

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message]:
        return (msg for msg, _ in self._items.values())

    def keep(self, history: Sequence[Message]) -> None:
        """Drop the entries of messages that are no longer in `history` (they could never be found
        again; dropping them only frees memory)."""
        live = {id(m) for m in history}  # an entry's message is alive, so no other object has its id
        for key in [k for k in self._items if k not in live]:
            del self._items[key]

    def clear(self) -> None:
        """Forget every entry."""
        self._items.clear()


@dataclass
class Summary:
    """A compaction summary and the last message it stands for."""

    text: str
    upto: int  # index just after the last covered message, as last seen (and as a session file records it)
    covered: Message | None = None  # None until bound to a history (a summary restored from a session file)

    def start(self, history: Sequence[Message]) -> int | None:
        """Where the verbatim turns start in `history`, or None when the covered messages are gone."""
        if self.covered is None:
            if not 0 < self.upto <= len(history):
                return None
            self.covered = history[self.upto - 1]
        last = self.upto - 1
        if not (last < len(history) and history[last] is self.covered):
            found = next((i for i in range(len(history) - 1, -1, -1) if history[i] is self.covered), None)
            if found is None:
                return None
            self.upto = found + 1
        return self.upto


def task_index(history: Sequence[Message]) -> int:
    """Index of the task: the first user message."""
    return next((i for i, m in enumerate(history) if isinstance(m, UserMessage)), 0)


def check_pairing(messages: Sequence[Message]) -> None:
    """Raise BrokenHistory unless every call is followed by its result and every result has its call."""
    pending: list[str] = []
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolResult):
            if msg.call_id not in pending:
                raise BrokenHistory(f"message {i}: tool result {msg.call_id!r} answers no call")
            pending.remove(msg.call_id)
            continue
        if pending:
            raise BrokenHistory(f"message {i}: call(s) {', '.join(pending)} have no result")
        if isinstance(msg, AssistantMessage):
            pending = [c.id for c in msg.tool_calls]
    if pending:
        raise BrokenHistory(f"call(s) {', '.join(pending)} at the end of the history have no result")


@dataclass
class View:
    """The edits a context window has decided on, and how they turn a history into the messages sent."""

    stubs: Edits[str] = field(default_factory=Edits)  # result -> the one line that replaces it
    clips: Edits[int] = field(default_factory=Edits)  # result -> characters its clipped form keeps
    summary: Summary | None = None
    announced: Edits[str] = field(default_factory=Edits)  # result -> the shown content a ContextEdit named
    # result -> (how it is shown, the shown copy): one object per variant, see `shown`
    _shown: Edits[tuple[tuple, ToolResult]] = field(default_factory=Edits, repr=False)
    _fresh: list[ToolResult] = field(default_factory=list, repr=False)  # given a new shown copy, not yet taken
    _summary_message: UserMessage | None = field(default=None, repr=False)
    _resent_message: UserMessage | None = field(default=None, repr=False)

    def tail_start(self, history: Sequence[Message]) -> int:
        """Where the verbatim turns start: 0, or just after what the summary covers."""
        if self.summary is None:
            return 0
        start = self.summary.start(history)
        if start is None:  # what it summarised was cut away (/clear, /rewind): it summarises nothing now
            self.summary = None
            return 0
        return start

    def render(self, history: Sequence[Message], cap_tokens: int) -> list[Message]:
        """The messages to send for `history`; no result above `cap_tokens` unless stubbed or clipped."""
        start = self.tail_start(history)
        out = self.head(history, start)
        for msg in history[start:] if start else history:
            out.append(self.shown(msg, cap_tokens) if isinstance(msg, ToolResult) else msg)
        return out

    def head(self, history: Sequence[Message], start: int) -> list[Message]:
        """What precedes the verbatim turns: nothing before a compaction; after one, the system prompt,
        the task, every later user message verbatim (nudges aside), then the summary."""
        if self.summary is None or not start:
            return []
        task = task_index(history)
        out: list[Message] = [m for m in history[:task] if isinstance(m, SystemMessage)]
        out.append(history[task])
        out += [m for m in history[task + 1: start] if isinstance(m, UserMessage) and not is_nudge(m.content)]
        out += self.resent(history[task + 1: start])
        text = f"{SUMMARY_HEADER}\n\n{self.summary.text}"
        if self._summary_message is None or self._summary_message.content != text:
            self._summary_message = UserMessage(text)  # one object per summary: see `shown`
        out.append(self._summary_message)
        return out

    def resent(self, summarised: Sequence[Message]) -> list[Message]:
        """The kept results (loaded skills) among the messages a summary replaces, as one user message."""
        kept = [m.content for m in summarised if is_kept(m)]
        if not kept:
            return []
        text = "\n\n".join([RESENT_HEADER, *kept])
        if self._resent_message is None or self._resent_message.content != text:
            self._resent_message = UserMessage(text)  # one object while it stays the same: see `shown`
        return [self._resent_message]

    def shown(self, msg: ToolResult, cap_tokens: int) -> ToolResult:
        """The result as sent: stubbed, clipped, or as it is (a kept one always). The same object from turn
        to turn, so the client's per-message encoding cache keeps working."""
        if is_kept(msg):
            return msg
        stub, keep = self.stubs.get(msg), self.clips.get(msg)
        if stub is not None:
            variant: tuple = ("stub", stub)
        elif keep is not None:
            variant = ("clip", keep)
        else:
            size = estimate_tokens(msg.content)
            if size <= cap_tokens:
                return msg
            variant = ("cap", len(msg.content) * cap_tokens // size)
        hit = self._shown.get(msg)
        if hit is not None and hit[0] == variant:
            return hit[1]
        kind, arg = variant
        view = replace(msg, content=arg if kind == "stub" else clip_text(msg.content, arg))
        self._shown[msg] = (variant, view)
        self._fresh.append(msg)
        return view

    def take_fresh(self) -> Iterator[tuple[ToolResult, ToolResult]]:
        """Each result given a new shown copy since the last call, with its copy as of its last rendering.
        Per turn this costs what changed, not what was ever edited (a long session stubs hundreds)."""
        fresh, self._fresh, seen = self._fresh, [], set()
        for msg in fresh:
            if id(msg) not in seen and (hit := self._shown.get(msg)) is not None:
                seen.add(id(msg))
                yield msg, hit[1]

    def forget_gone(self, history: Sequence[Message]) -> None:
        """Free the edits of messages no longer in `history`."""
        for edits in (self.stubs, self.clips, self._shown, self.announced):
            edits.keep(history)

    def clear(self) -> None:
        """Forget every edit and the summary."""
        self.stubs.clear()
        self.clips.clear()
        self._shown.clear()
        self._fresh.clear()
        self.announced.clear()
        self.summary = None
