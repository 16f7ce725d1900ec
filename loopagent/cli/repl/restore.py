"""What the model is told after /undo, /redo or /rewind put the files back.

Without a note the history still says "wrote new.txt" while the file is gone, and the next
answer builds on that. The note is a short user message in the history (so it is sent with the
next request and saved in the session like any message), shown to the person as well.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from loopagent.cli.repl.recap import NOTE, clip
from loopagent.cli.repl.restore_plan import NOT_DONE, QUESTION, YOURS, apply, asks, done_line, plan_lines
from loopagent.messages import AssistantMessage, ToolCall, ToolResult, UserMessage

if TYPE_CHECKING:
    from loopagent.cli.repl.state import ReplState

SHOWN_CALLS = 5  # calls named in one note; more are counted


def restore_in_repl(repl: ReplState, prompt: Any, timeline: Any, kind: str, index: int = 0) -> Any:
    """/undo, /redo, /rewind's files: show what will change, ask when the person's own changes would go
    (as /init asks, at the REPL's prompt), then restore. The restored checkpoint, None if there was nothing
    to restore or it failed (said), False if the person said no."""
    from loopagent.checkpoint import CheckpointError, NothingToDo
    from loopagent.checkpoint.plan import preview
    from loopagent.cli.repl.recap import session_of

    session = session_of(repl)[0]
    try:
        plan = preview(timeline, kind, session, index)
    except NothingToDo as exc:
        repl.renderer.say(str(exc))
        return None
    if plan is None or (not plan.changes and not plan.finishing):
        repl.renderer.say("no file changes since that message" if kind == "rewind" else "no file changes")
        return None
    if not plan.finishing:
        for line in plan_lines(plan):
            repl.renderer.say(line, "yellow" if line == YOURS else "")
    if asks(plan) and repl.ask(prompt, f"{QUESTION[kind]} [y/N] ").lower() not in ("y", "yes"):
        repl.renderer.say(f"nothing {NOT_DONE[kind]}: the files are as they were")
        return False
    try:
        c = apply(timeline, plan, session, index)
    except NothingToDo as exc:
        repl.renderer.say(str(exc))
        return None
    except CheckpointError as exc:
        repl.renderer.say(f"{kind} failed: {exc}", "red")
        return None
    repl.renderer.say(done_line(kind, c, plan, "/redo" if kind == "rewind" or plan.yours else ""))
    return c


def tell_model(repl: ReplState, text: str) -> None:
    """Add the note to the history (sent next, saved in the session) and show it."""
    repl.agent.add(repl.history, UserMessage(NOTE + text))
    repl.renderer.say(f"note for the model: {text}", "dim")


def numbered_calls(repl: ReplState, since: int) -> list[tuple[int, ToolCall]]:
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


def files_note(repl: ReplState, since: int, point: str) -> str:
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


def undone_note(repl: ReplState, target: Any) -> str:
    """The note after /undo restored checkpoint `target` (taken before some call)."""
    from loopagent.cli.repl.recap import session_of

    session_id, _ = session_of(repl)
    index = getattr(target, "index", None)
    if index is not None and getattr(target, "session", "") == session_id:
        return files_note(repl, index, f"checkpoint {target.short}")
    message = getattr(target, "message", "") or "an earlier checkpoint"
    return (f"the user undid file changes: the files are as they were at checkpoint {target.short} "
            f"({message}). Earlier results about those files may no longer hold.")
