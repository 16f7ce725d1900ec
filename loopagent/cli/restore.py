"""What the model is told after /undo, /redo or /rewind put the files back.

Without a note the history still says "wrote new.txt" while the file is gone, and the next
answer builds on that. The note is a short user message in the history (so it is sent with the
next request and saved in the session like any message), shown to the person as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopagent.cli.recap import NOTE, clip
from loopagent.messages import AssistantMessage, ToolCall, ToolResult, UserMessage

if TYPE_CHECKING:
    from loopagent.cli.repl import Repl

SHOWN_CALLS = 5  # calls named in one note; more are counted


@dataclass(frozen=True)
class Moved:
    """What a restore command said, whether it moved the files, and the checkpoint it restored (if known)."""

    said: str
    changed: bool
    target: Any = None  # a checkpoint.Checkpoint


def restores(store: Any, action: Callable[[], str]) -> Moved:
    """Run an undo/redo/rewind of `store` (the REPL's checkpoint commands) and find out what it restored.

    The undo stack grows by one entry per restore and shrinks by one per redo; its newest entry
    names the commit restored.
    """
    timeline = getattr(store, "timeline", None)
    stack = timeline.read_stack() if timeline is not None else None
    said = action()
    if timeline is None or stack is None:
        return Moved(said, False)
    after = timeline.read_stack()
    if len(after) < len(stack):
        return Moved(said, True)
    if after == stack:
        return Moved(said, False)
    restored = after[-1].get("restored", "")
    return Moved(said, True, next((c for c in timeline.list() if c.commit == restored), None))


def tell_model(repl: Repl, text: str) -> None:
    """Add the note to the history (sent next, saved in the session) and show it."""
    repl.agent.add(repl.history, UserMessage(NOTE + text))
    repl.renderer.say(f"note for the model: {text}", "dim")


def numbered_calls(repl: Repl, since: int) -> list[tuple[int, ToolCall]]:
    """The file-changing calls whose results sit at history index `since` or later, with their numbers
    (calls counted from the start of the conversation, as the screen numbers them)."""
    number, numbers, calls = 0, {}, {}
    for message in repl.history:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                number += 1
                numbers[call.id], calls[call.id] = number, call
    tools = getattr(repl.agent.registry, "tools", {})
    found = []
    for index, message in enumerate(repl.history):
        if index >= since and isinstance(message, ToolResult) and message.call_id in calls:
            call = calls[message.call_id]
            tool = tools.get(call.name)
            if tool is None or not getattr(tool, "read_only", False):
                found.append((numbers[call.id], call))
    return found


def described(call: ToolCall) -> str:
    """`write_file new.txt`, `shell make test`: the name and what the call was about."""
    try:
        args = json.loads(call.arguments)
    except ValueError:
        args = {}
    subject = (args.get("path") or args.get("command") or "") if isinstance(args, dict) else ""
    return clip(f"{call.name} {subject}".strip(), 60)


def files_note(repl: Repl, since: int, point: str) -> str:
    """The note for files put back to how they were before the history's message `since`."""
    calls = numbered_calls(repl, since)
    if not calls:
        return f"the user restored the files to how they were at {point}; earlier results about them may no longer hold."
    first, last = calls[0][0], calls[-1][0]
    span = f"call {first}" if first == last else f"calls {first}..{last}"
    names = ", ".join(described(c) for _, c in calls[:SHOWN_CALLS])
    more = f" and {len(calls) - SHOWN_CALLS} more" if len(calls) > SHOWN_CALLS else ""
    return (f"the user undid the changes of {span} ({names}{more}); the files are as they were before "
            f"{described(calls[0][1])}. Results of those calls no longer describe the files.")


def undone_note(repl: Repl, target: Any) -> str:
    """The note after /undo restored checkpoint `target` (taken before some call)."""
    from loopagent.cli.recap import session_of

    session_id, _ = session_of(repl)
    index = getattr(target, "index", None)
    if index is not None and getattr(target, "session", "") == session_id:
        return files_note(repl, index, f"checkpoint {target.short}")
    message = getattr(target, "message", "") or "an earlier checkpoint"
    return (f"the user undid file changes: the files are as they were at checkpoint {target.short} "
            f"({message}). Earlier results about those files may no longer hold.")
