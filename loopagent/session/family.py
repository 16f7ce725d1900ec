"""Sessions as a tree: where a fork branches off its parent, and the family of a workspace's sessions.

A fork is a new file whose header names its parent: `{"session": id, "message": N}`, N being the
index of the last message both files share. The parent file is never touched.
"""

from __future__ import annotations

from loopagent.errors import SessionError
from loopagent.messages import AssistantMessage, Message, ToolResult
from loopagent.session.catalog import Summary
from loopagent.session.loader import Loaded


def fork_spec(spec: str) -> tuple[str, int | None]:
    """`SESSION[:N]` as (session, N or None); raises SessionError when N is not a message number."""
    session, sep, number = spec.rpartition(":")
    if not sep or not session:
        return spec, None
    if not number.isdigit():
        if "/" in number or "." in number:  # a path holding a colon, not a message number
            return spec, None
        raise SessionError(f"--fork {spec}: the part after ':' must be a message number")
    return session, int(number)


def branch(loaded: Loaded, upto: int | None) -> tuple[list[Message], int]:
    """The messages a fork of `loaded` starts with (up to message `upto`, all when None) and the index
    of the last one shared. A cut inside a tool round keeps that round's results, so that every call
    has its result; the repair results of an unfinished last round are added as `load` made them."""
    history = [*loaded.history, *loaded.missing]
    if not history:
        raise SessionError(f"session {loaded.id} has no messages to fork")
    last = len(history) - 1
    if upto is None:
        upto = last
    if upto > last:
        raise SessionError(f"session {loaded.id} has messages 0 to {last}; cannot fork at message {upto}")
    end = upto + 1
    calls = answered_round(history, upto)
    while end < len(history) and calls and isinstance(history[end], ToolResult):
        calls.discard(history[end].call_id)  # type: ignore[union-attr]
        end += 1
    return history[:end], end - 1


def answered_round(history: list[Message], upto: int) -> set[str]:
    """The call ids of the latest model reply at or before `upto` still without a result by `upto`."""
    for i in range(upto, -1, -1):
        message = history[i]
        if isinstance(message, AssistantMessage):
            done = {m.call_id for m in history[i + 1:upto + 1] if isinstance(m, ToolResult)}
            return {c.id for c in message.tool_calls} - done
    return set()


def family(found: list[Summary]) -> list[tuple[int, Summary]]:
    """`found` (newest first) as a tree: each root followed by its forks, depth-first, each with its depth.

    A fork whose parent is not in the list (deleted, another workspace) is a root; a cycle in edited
    headers cannot loop, since each session is placed once."""
    ids = {s.id for s in found}
    children: dict[str, list[Summary]] = {}
    roots = []
    for s in found:
        parent = s.parent["session"] if s.parent else None
        if parent in ids and parent != s.id:
            children.setdefault(parent, []).append(s)
        else:
            roots.append(s)
    out: list[tuple[int, Summary]] = []
    placed: set[str] = set()

    def place(s: Summary, depth: int) -> None:
        if s.id in placed:
            return
        placed.add(s.id)
        out.append((depth, s))
        for child in sorted(children.get(s.id, []), key=lambda c: (c.created, c.id)):  # oldest fork first
            place(child, depth + 1)

    for root in roots:
        place(root, 0)
    for s in found:  # members of a parent cycle: no root leads to them
        place(s, 0)
    return out
