"""Compaction: the model summarises the older turns; the request becomes the system prompt, the task,
every later user message verbatim, the summary, and the recent turns with their call/result pairs intact.

Pure: `plan` says what to ask, `apply` takes up the answer. The loop asks the model in between,
as a turn of its own (TurnStart, spinner, usage, cancel token).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loopagent.context.estimate import estimate_tokens, messages_tokens
from loopagent.context.prune import clip_text
from loopagent.context.view import Summary, check_pairing, task_index
from loopagent.counts import counted
from loopagent.errors import BudgetSpent, ContextFull
from loopagent.events import Compacted
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, Usage, UserMessage

if TYPE_CHECKING:
    from loopagent.context.window import ContextWindow

KEEP_RECENT = 0.35  # compaction keeps recent turns up to this share of the limit verbatim
KEEP_ON_DEMAND = 0.1  # ...and less when a person asked for it (/compact): they want the room
TODO_HEAD = "Your todo list as it stands (keep it current with todo_write):"

SUMMARY_SYSTEM = "You summarise a coding agent's work so that it can continue after its context is compacted."
SUMMARY_PROMPT = """Write a working summary of the transcript above; it will replace those turns in your context.
Be specific (paths, function names, commands, error messages) and cover:
- files read and what matters in them;
- changes made: file, what, and why, and whether they were checked;
- commands run and their outcome (tests passing or failing, errors);
- decisions taken and facts learned;
- what remains to do, next step first.
Do not repeat the task or the user's messages: they are kept verbatim. Plain text only."""




@dataclass(frozen=True)
class Compaction:
    """A summary the window needs before the next request fits: the loop runs it as a model turn of its
    own and hands the reply back (`ContextWindow.compacted`)."""

    messages: list[Message]  # the summary request (no tools)
    start: int  # the first message summarised
    upto: int  # just after the last one
    tokens_before: int
    focus: str = ""

    def describe(self) -> str:
        """What the step does, for the person watching."""
        return (f"summarising {counted(self.upto - self.start, 'older message')} (~{self.tokens_before} tokens in the context)"
                + (f", focus: {self.focus}" if self.focus else ""))


def plan(window: ContextWindow, history: Sequence[Message], focus: str = "", budget: int | None = None,
         required: bool = False) -> Compaction | None:
    """The summary request for the older turns of `history`, or None when nothing is old enough.
    A request over `budget` raises BudgetSpent."""
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
    return Compaction(messages, start, upto, before, focus)


def apply(window: ContextWindow, history: Sequence[Message], step: Compaction, reply: AssistantMessage) -> Compacted:
    """Take up the summary the model wrote for `step`; an empty one raises ContextFull."""
    text = reply.text.strip()
    if not text:
        raise ContextFull("compaction failed: the model returned an empty summary")
    usage = reply.usage or Usage(messages_tokens(step.messages), estimate_tokens(reply.text))
    text = with_todos(text, history, step.upto)
    window.view_state.summary = Summary(text, step.upto, history[step.upto - 1])
    after = window.view(history)
    check_pairing(after)
    return Compacted(text, step.upto, step.tokens_before, window.tokens(after), usage, step.focus)


def with_todos(summary: str, history: Sequence[Message], upto: int) -> str:
    """The summary with the model's todo list (its latest todo_write) when that list is among the
    summarised messages: the checklist is never forgotten with the turns that made it."""
    latest = next((i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], ToolResult)
                   and history[i].details is not None and history[i].details.todos is not None), None)
    if latest is None or latest >= upto:  # none, or still verbatim in the recent turns
        return summary
    from loopagent.details import checklist

    todos = history[latest].details.todos  # type: ignore[union-attr]
    return f"{summary}\n\n{TODO_HEAD}\n{checklist(todos)}"


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
