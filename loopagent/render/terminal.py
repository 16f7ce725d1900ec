"""The terminal renderer: a listener that shows a run to a person.

It keeps what the screen needs to know across events (call numbers, thinking so far, what a task
cost) and hands the lines to a sink (render/sink.py): Rich on a terminal (Markdown, colours, a live
area with elapsed times; NO_COLOR keeps all of it but the colours), plain text for TERM=dumb and
output that is not a terminal. What each event says is in render/lines.py; the answer's blocks in
render/answer.py; the live area in render/live.py.

Every string that did not come from loop itself (model text, thinking, tool names, results,
paths, commands, diffs) passes through `safe.printable` before it is laid out.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING

from loopagent.events import (
    STDERR_KINDS,
    AgentStart,
    AssistantDone,
    CheckRan,
    Compacted,
    Event,
    HookRan,
    Notice,
    RunEnd,
    TextDelta,
    ThinkingDelta,
    ToolCalled,
    ToolFinished,
    ToolStarted,
    TurnStart,
)
from loopagent.render import lines
from loopagent.render.approval import ApprovalView
from loopagent.render.results import shown, subject_of
from loopagent.render.safe import printable
from loopagent.render.sink import PlainSink, RichSink, Sink
from loopagent.thinking import ThinkSplitter

if TYPE_CHECKING:
    from loopagent.tools.spec import ToolSpec

CHECK_LINES = 8  # of a failed check's output shown on screen


def is_terminal(out: IO[str], env: Mapping[str, str]) -> bool:
    """Whether `out` is a screen that takes escape codes: a terminal, and TERM is not `dumb`."""
    if env.get("TERM") == "dumb":
        return False
    isatty = getattr(out, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class TerminalRenderer(ApprovalView):
    """A listener for agent events. `color` picks the Rich sink (default: on a terminal), `live` its
    live area; `monochrome` drops colours and other styles (default: when NO_COLOR is set); `tools` are
    the run's tool specs, which say how a call is shown (default: the built-in tools)."""

    def __init__(self, out: IO[str] | None = None, *, color: bool | None = None, live: bool | None = None,
                 show_thinking: bool = False, width: int | None = None, monochrome: bool | None = None,
                 env: Mapping[str, str] | None = None, tools: Iterable[ToolSpec] | None = None):
        env = os.environ if env is None else env
        self.tools = None if tools is None else {spec.name: spec for spec in tools}
        self.out = out or sys.stdout
        self.color = is_terminal(self.out, env) if color is None else color
        self.show_thinking = show_thinking
        if self.color:
            mono = bool(env.get("NO_COLOR")) if monochrome is None else monochrome
            self.sink: Sink = RichSink(self.out, monochrome=mono, live=True if live is None else live, width=width,
                                       show_thinking=show_thinking)
        else:
            self.sink = PlainSink(self.out, width, show_thinking)
        self.calls = 0
        self.numbers: dict[str, int] = {}  # call id -> its [N]
        self.last_call = 0  # the [N] the most recent tool line belongs to
        self.approved_diffs: dict[str, str] = {}  # call id -> the diff its approval prompt showed
        self.task = lines.Tally()  # what the current task cost
        self.total = lines.Tally()  # ... and all tasks this renderer showed
        self.tasks = 0
        self.tool_started = 0.0
        self.children: dict[int, str] = {}  # running `task` children's lines, by child
        self._new_turn()

    @property
    def console(self):
        """The Rich console (colour mode only)."""
        return self.sink.console

    @property
    def width(self) -> int:
        """Cells a line may take: the terminal's width now (80 for a file, where nothing wraps)."""
        return self.sink.room or self.sink.width

    @property
    def typing(self) -> str:
        return self.sink.typing

    @typing.setter
    def typing(self, text: str) -> None:  # the REPL's type-ahead: a message being typed during a turn
        self.sink.typing = text

    def _new_turn(self) -> None:
        self.inline = ThinkSplitter()
        self.thinking = ""
        self.thought_shown = False
        self.deltas = False
        self.sink.new_turn()

    # ---- dispatch ---------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        handler = getattr(self, "on_" + type(event).__name__, None)
        if handler is not None:
            handler(event)

    def on_AgentStart(self, event: AgentStart) -> None:  # noqa: N802 - named after the event
        self.task = lines.Tally()
        self.tasks += 1

    def on_TurnStart(self, event: TurnStart) -> None:  # noqa: N802
        self._new_turn()
        self.set_activity("compacting the context" if event.purpose == "compact" else "waiting for the model")

    def on_ThinkingDelta(self, event: ThinkingDelta) -> None:  # noqa: N802
        self.thinking_piece(printable(event.text))

    def on_TextDelta(self, event: TextDelta) -> None:  # noqa: N802
        self.deltas = True
        self.text_pieces(self.inline.feed(event.text))

    def on_AssistantDone(self, event: AssistantDone) -> None:  # noqa: N802
        self.set_activity(None)
        msg = event.message
        if not self.deltas and msg.text:  # a client that sent no deltas
            self.text_pieces(self.inline.feed(msg.text))
        self.text_pieces(self.inline.finish())
        self.end_thinking(msg.thinking)
        self.sink.end_answer(bool(msg.tool_calls))

    def on_ToolCalled(self, event: ToolCalled) -> None:  # noqa: N802
        self.calls += 1
        self.numbers[event.call.id] = self.last_call = self.calls
        self.sink.row(lines.call_line(self.calls, printable(event.call.name), subject_of(event.call, event.subject)))

    def on_ToolStarted(self, event: ToolStarted) -> None:  # noqa: N802
        self.tool_started = time.monotonic()
        self.set_activity(f"running {printable(event.call.name)}")

    def on_ToolFinished(self, event: ToolFinished) -> None:  # noqa: N802
        self.set_activity(None)
        result = shown(event.result)
        change = result.diff
        seen = self.approved_diffs.pop(event.call.id, None)
        if seen is not None and seen.rstrip("\n") == change.rstrip("\n"):
            change = ""  # the person just saw this diff in the approval prompt
        # Read-only calls of a turn run together: a result that does not follow its own call line
        # says whose it is.
        number = self.numbers.get(event.call.id, self.last_call)
        owner = f"[{number}] " if number != self.last_call else ""
        self.last_call = number
        # Plain output is for logs and scripts: the same text on every run, so no times.
        took = time.monotonic() - self.tool_started if self.tool_started and self.color else None
        self.tool_started = 0.0
        self.sink.rows(lines.result_lines(result, owner, took, self.sink.width))
        if event.result.details is not None and event.result.details.todos is not None:
            self.sink.rows(lines.todo_rows(event.result.details.todos))
        if change:
            self.sink.diff(change, "      ")
        found = event.result.details.diagnostics if event.result.details else ""
        if found:  # what the language server says the change broke, under its diff
            self.sink.rows([lines.diagnostics_line(printable(line)) for line in found.split("\n")])

    def on_Notice(self, event: Notice) -> None:  # noqa: N802
        if event.kind == "checkpoint":  # one per snapshot; counted for the closing line
            self.task.checkpoints += 1
            self.total.checkpoints += 1
            return
        if event.kind in STDERR_KINDS:  # diagnostics: render/notes.py shows them on stderr
            return
        self.sink.row(lines.notice_line(printable(event.kind), printable(event.text)), clip=False)
        if event.kind == "compact":  # the summary request that follows takes a while; Compacted clears it
            self.set_activity("compacting the context")

    def on_HookRan(self, event: HookRan) -> None:  # noqa: N802
        self.sink.row(lines.hook_line(event), clip=False)

    def on_CheckRan(self, event: CheckRan) -> None:  # noqa: N802
        self.set_activity(None)
        how = "passed" if event.passed else "timed out" if event.timed_out else (
            f"failed with exit {event.exit_code}" if event.exit_code is not None else "could not run")
        text = printable(f"check {event.command}: {how} (attempt {event.attempt}, {event.seconds:.1f} s)")
        self.sink.row(((text, "green" if event.passed else "yellow"),), clip=False)
        if not event.passed:  # the end of its output says why; the model gets more of it
            self.sink.rows([((f"  {printable(line)}", "dim"),) for line in event.output.splitlines()[-CHECK_LINES:]])

    def on_Compacted(self, event: Compacted) -> None:  # noqa: N802
        self.set_activity(None)
        self.sink.row(lines.compacted_line(event.tokens_before, event.tokens_after))

    def on_RunEnd(self, event: RunEnd) -> None:  # noqa: N802
        self.text_pieces(self.inline.finish())  # a turn that ended unfinished (only thinking, cut off)
        if self.thinking:
            self.end_thinking()
        self.close()
        u = event.usage
        self.task.steps, self.task.prompt, self.task.completion = event.steps, u.prompt_tokens, u.completion_tokens
        self.total.steps += event.steps
        self.total.prompt += u.prompt_tokens
        self.total.completion += u.completion_tokens
        self.task.cost = event.cost
        if event.cost is not None:
            self.total.cost = (self.total.cost or 0.0) + event.cost
        total = self.total if self.tasks > 1 else None
        # As wide as the screen (a wrapped line after every turn is noise); a file gets it whole.
        self.sink.row(lines.done_line(event.status, printable(event.message), self.task, total, self.sink.room),
                      clip=False)

    # ---- pieces -------------------------------------------------------------------------------

    def text_pieces(self, pieces: list[tuple[str, str]]) -> None:
        """Streamed content cut into thinking (inline `<think>` blocks) and answer text."""
        for kind, text in pieces:
            if kind == "thinking":
                self.thinking_piece(printable(text))
                continue
            self.end_thinking()
            self.set_activity(None)
            self.sink.answer(printable(text))

    def thinking_piece(self, text: str) -> None:
        self.set_activity(None)
        self.thinking += text
        self.sink.thinking(text)

    def end_thinking(self, full: str = "") -> None:
        """Thinking is over: one dim summary line (or, with --show-thinking, the whole text), once a turn."""
        streamed = bool(self.thinking)
        text = (self.thinking or ("" if self.thought_shown else printable(full))).strip()
        self.thinking = ""
        if not text:
            return
        self.thought_shown = True
        self.sink.thinking_over(text, streamed)
        if not self.show_thinking:
            self.sink.row(lines.thinking_line(text))

    # ---- what the REPL and the approver call ----------------------------------------------------

    def line(self, text: str) -> None:
        """One line of loop's own text."""
        self.sink.row(((text, ""),), clip=False)

    def say(self, text: str, style: str = "", whole: bool = False) -> None:
        """A line from the REPL or the approver, styled on a colour terminal; `whole`: left for the
        terminal to wrap, so a command in it copies as one line."""
        self.sink.say(printable(text), style, whole)

    def set_activity(self, label: str | None) -> None:
        self.sink.set_activity(label)

    def child_line(self, key: int, text: str | None) -> None:
        """A `task` child's one updating line (None: the child is done), shown under the running call."""
        lines = self.children
        if text is None:
            lines.pop(key, None)
        else:
            lines[key] = text
        # under the spinner, each line aligned with the first one's text
        self.set_activity("\n  ".join(lines[k] for k in sorted(lines)) if lines else "running task")

    def set_queued(self, queued: list[str]) -> None:
        """Messages typed during a turn, shown until they are sent."""
        self.sink.set_queued(queued)

    def resume(self) -> None:
        self.sink.resume()

    def pause(self) -> None:
        """Stop the live area (before an approval prompt or the REPL prompt takes the terminal)."""
        self.sink.pause()

    def close(self) -> None:
        self.sink.set_activity(None)
        self.sink.pause()


# The name the CLI used before colour existed; it picks plain text by itself where needed.
PlainRenderer = TerminalRenderer
