"""Compaction: the model summarises the older turns; the request becomes the system prompt, the task,
every later user message verbatim, the summary, and the recent turns with their call/result pairs intact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from loopagent.client import ModelClient
from loopagent.context.estimate import estimate_tokens, messages_tokens
from loopagent.context.prune import clip_text
from loopagent.context.stops import BudgetSpent, CompactionCancelled, ContextFull
from loopagent.context.view import Summary, check_pairing, task_index
from loopagent.events import Compacted, Event, Notice
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, Usage, UserMessage

if TYPE_CHECKING:
    from loopagent.context.window import ContextWindow

KEEP_RECENT = 0.35  # compaction keeps recent turns up to this share of the limit verbatim
KEEP_ON_DEMAND = 0.1  # ...and less when a person asked for it (/compact): they want the room

SUMMARY_SYSTEM = "You summarise a coding agent's work so that it can continue after its context is compacted."
SUMMARY_PROMPT = """Write a working summary of the transcript above; it will replace those turns in your context.
Be specific (paths, function names, commands, error messages) and cover:
- files read and what matters in them;
- changes made: file, what, and why, and whether they were checked;
- commands run and their outcome (tests passing or failing, errors);
- decisions taken and facts learned;
- what remains to do, next step first.
Do not repeat the task or the user's messages: they are kept verbatim. Plain text only."""


class CancelToken(Protocol):
    """What compaction needs of the turn's cancel token (the client gets the token itself)."""

    def is_set(self) -> bool: ...


def _noop(event: Event) -> None:
    pass


def compact(window: ContextWindow, history: Sequence[Message], model: ModelClient,
            emit: Callable[[Event], None] = _noop, focus: str = "", budget: int | None = None,
            required: bool = False, cancel: CancelToken | None = None) -> Compacted | None:
    """Summarise the older turns of `history`, keep the recent ones verbatim; emit and return Compacted.

    Returns None when there is nothing old enough to summarise. Model failures propagate, except
    once `cancel` (the turn's cancel token, handed to the client) is set: then CompactionCancelled.
    A request over `budget` raises BudgetSpent, an empty summary ContextFull.
    """
    view = window.view_state
    before = window.tokens(window.view(history))
    start = max(view.tail_start(history), task_index(history) + 1)
    upto = keep_from(window, history, KEEP_RECENT if required else KEEP_ON_DEMAND)
    if upto <= start:
        return None
    messages = summary_request(window, history, upto, focus)
    asked = messages_tokens(messages)
    if budget is not None and asked > budget:
        raise BudgetSpent(f"compacting the context (~{asked} tokens) would exceed --max-tokens-total")
    # Its own visible step: without it the screen shows nothing while the summary is written.
    emit(Notice("compact", f"summarising {upto - start} older messages (~{before} tokens in the context)"
                + (f", focus: {focus}" if focus else "")))
    reply = summarise(model, messages, cancel)
    text = reply.text.strip()
    if not text:
        raise ContextFull("compaction failed: the model returned an empty summary")
    usage = reply.usage or Usage(asked, estimate_tokens(reply.text))
    view.summary = Summary(text, upto, history[upto - 1])
    after = window.view(history)
    check_pairing(after)
    event = Compacted(text, upto, before, window.tokens(after), usage, focus)
    emit(event)
    return event


def summarise(model: ModelClient, messages: list[Message], cancel: CancelToken | None) -> AssistantMessage:
    """The model's reply to a summary request; its text is not streamed to the screen as an answer."""
    if cancel is not None and cancel.is_set():
        raise CompactionCancelled("cancelled by the user")
    try:
        if cancel is None:  # clients and stand-ins that predate cancel tokens take three arguments
            return model.complete(messages, [], _noop)
        return model.complete(messages, [], _noop, cancel=cancel)
    except Exception:
        if cancel is not None and cancel.is_set():
            raise CompactionCancelled("cancelled by the user") from None
        raise


def keep_from(window: ContextWindow, history: Sequence[Message], share: float) -> int:
    """Where the verbatim tail starts: the oldest turn start whose turns fit `share` of the limit;
    always at least the last turn."""
    view = window.view_state
    first = max(view.tail_start(history), task_index(history) + 1)
    starts = [i for i in range(first, len(history)) if isinstance(history[i], (UserMessage, AssistantMessage))]
    if not starts:
        return len(history)
    cap, budget = window.result_cap(history), int(window.limit * share)
    keep, end, kept = starts[-1], len(history), 0
    for s in reversed(starts):
        turn = [view.shown(m, cap) if isinstance(m, ToolResult) else m for m in history[s:end]]
        kept, end = kept + messages_tokens(turn), s
        if kept > budget:
            break
        keep = s
    return keep


def summary_request(window: ContextWindow, history: Sequence[Message], upto: int, focus: str) -> list[Message]:
    """The messages that ask for a summary of history[..upto], sized to fit the window."""
    view = window.view_state
    task = history[task_index(history)]
    intro = f"The task: {task.content if isinstance(task, UserMessage) else ''}\n\n"
    if view.summary is not None:
        intro += f"Summary of the work before this transcript:\n{view.summary.text}\n\n"
    words = max(100, int(window.limit * 0.1))  # about 0.13 of the limit in tokens
    ask = SUMMARY_PROMPT + f"\nKeep it under {words} words." + (f"\nFocus especially on: {focus}" if focus else "")
    room = window.limit - estimate_tokens(SUMMARY_SYSTEM + intro + ask) - 50
    part = history[max(view.tail_start(history), task_index(history) + 1): upto]
    cap = 4000
    while True:
        lines = [transcript_line(window, msg, cap) for msg in part]
        text = "\n".join(lines)
        if estimate_tokens(text) <= room or cap <= 200:
            break
        cap //= 2
    while estimate_tokens(text) > room and len(lines) > 1:
        lines = lines[len(lines) // 4 or 1:]  # drop the oldest quarter: the end matters most
        text = "[... earlier turns omitted ...]\n" + "\n".join(lines)
    body = f"{intro}<transcript>\n{text}\n</transcript>\n\n{ask}"
    return [SystemMessage(SUMMARY_SYSTEM), UserMessage(body)]


def transcript_line(window: ContextWindow, msg: Message, cap: int) -> str:
    """One message of the transcript a summary is written from."""
    if isinstance(msg, ToolResult):
        content = window.view_state.stubs.get(msg) or clip_text(msg.content, cap)
        return f"[result of {msg.name}{' (error)' if msg.is_error else ''}]\n{content}"
    if isinstance(msg, AssistantMessage):
        calls = "".join(f"\n[call {c.name} {clip_text(c.arguments, cap)}]" for c in msg.tool_calls)
        return f"[assistant] {msg.text}{calls}"
    return f"[{msg.role}] {msg.content}"
