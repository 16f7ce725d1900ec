"""The terminal renderer: a listener that shows a run to a person.

On a colour terminal (Rich): the answer streams as Markdown, one line per tool call with a
result summary and coloured diffs, a spinner while waiting, a closing line. With NO_COLOR,
TERM=dumb or output that is not a terminal: the same words as plain text, no escape codes.

Rendering cost is linear in the answer's length: streamed text is cut into blocks
(paragraphs, code chunks), each finished block is printed once and only the open block
is live; the live area is redrawn on a timer, never per token.

Every string that did not come from loop itself (model text, thinking, tool names, results,
paths, commands, diffs) passes through `safe.printable` before it is laid out; in colour mode
every printed segment passes through it again (`Escaped`), so text that Markdown decodes
(an entity such as `&#x202e;`) cannot reach the terminal raw either.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import IO

from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound
from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.segment import Segment
from rich.spinner import Spinner
from rich.syntax import Syntax
from rich.text import Text

from loopagent.events import (
    STDERR_KINDS,
    AssistantDone,
    Compacted,
    Event,
    Notice,
    RunEnd,
    TextDelta,
    ThinkingDelta,
    ToolCalled,
    ToolFinished,
    ToolStarted,
    TurnStart,
)
from loopagent.render import diff as diffs
from loopagent.render.approval import ApprovalView
from loopagent.render.markdown import Block, BlockSplitter
from loopagent.render.results import shown, subject_of, summary  # noqa: F401 - tests import summary from here
from loopagent.render.safe import printable

LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")
CODE_THEME = "monokai"
# Text up to this size is held back until the turn ends: if tool calls come with it, it is commentary.
HOLD_CHARS = 1500


@lru_cache(maxsize=64)
def lexer(lang: str) -> Lexer:
    """A Pygments lexer by fence name; looked up once (the lookup scans every installed plugin)."""
    try:
        return get_lexer_by_name(lang or "text")
    except ClassNotFound:
        return TextLexer()


def escaped(segments: Iterable[Segment]) -> Iterator[Segment]:
    """Rich segments with their text through `printable`; control segments (cursor moves) are Rich's own."""
    for seg in segments:
        yield seg if seg.control else Segment(printable(seg.text), seg.style)


class Escaped:
    """A renderable whose text segments pass through `printable`: the last wall before the terminal."""

    def __init__(self, inner: RenderableType):
        self.inner = inner

    def __rich_console__(self, console, options):
        yield from escaped(console.render(self.inner, options))


class Activity:
    """A spinner line with elapsed seconds, redrawn by the live display's timer."""

    def __init__(self, label: str):
        self.label = label
        self.started = time.monotonic()
        self.spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console, options):
        elapsed = time.monotonic() - self.started
        self.spinner.update(text=Text(f"{self.label} {elapsed:.0f}s", style="dim"))
        yield self.spinner


class LiveView:
    """What the live area shows: held text, the open block, the activity and queued messages."""

    def __init__(self, renderer: TerminalRenderer):
        self.r = renderer

    def __rich_console__(self, console, options):
        r = self.r
        parts: list[RenderableType] = [r.block_view(b, False) for b in list(r.held)]
        open_block = r.splitter.open_block()
        if open_block is not None:
            parts.append(r.block_view(open_block, False))
        if r.thinking and not r.show_thinking:
            parts.append(Text(f"thinking… {len(r.thinking.split())} words", style="dim italic"))
        if r.activity is not None:
            parts.append(r.activity)
        parts += [Text(f"queued: {printable(q)}", style="yellow") for q in list(r.queued)]
        if r.typing:
            parts.append(Text(f"> {printable(r.typing)}", style="dim"))
        # Only the newest lines fit: a live area taller than the screen cannot be redrawn in place.
        lines = console.render_lines(Group(*parts), options.update(height=None), pad=False)
        for line in lines[-max(3, console.size.height - 2):]:
            yield from escaped(line)
            yield Segment.line()


def use_colour(out: IO[str]) -> bool:
    """Colour only on a terminal, and not when NO_COLOR or TERM=dumb ask for plain text."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


class TerminalRenderer(ApprovalView):
    """A listener for agent events. `color`/`live` default to what the output stream supports."""

    def __init__(self, out: IO[str] | None = None, *, color: bool | None = None, live: bool | None = None,
                 show_thinking: bool = False, width: int | None = None):
        self.out = out or sys.stdout
        self.color = use_colour(self.out) if color is None else color
        self.live_ok = self.color if live is None else live
        self.show_thinking = show_thinking
        self.console = Console(file=self.out, force_terminal=self.color, no_color=not self.color,
                               width=width, highlight=False, emoji=False, soft_wrap=False)
        self.calls = 0
        self.numbers: dict[str, int] = {}  # call id -> its [N]
        self.last_call = 0  # the [N] the most recent tool line belongs to
        self.approved_diffs: dict[str, str] = {}  # call id -> the diff its approval prompt showed
        self.checkpoints = 0
        self.queued: list[str] = []
        self.typing = ""  # a message being typed during a turn (the REPL's type-ahead)
        self.live = None
        self.activity: Activity | None = None
        self.tool_started = 0.0
        self._new_turn()

    def _new_turn(self) -> None:
        self.splitter = BlockSplitter()
        self.held: list[Block] = []
        self.held_chars = 0
        self.committed = False  # blocks of this turn were printed as the answer
        self.printed_blocks = 0
        self.thinking = ""
        self.streamed = False
        self.at_line_start = True

    # ---- dispatch ---------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        handler = getattr(self, "on_" + type(event).__name__, None)
        if handler is not None:
            handler(event)

    def on_TurnStart(self, event: TurnStart) -> None:  # noqa: N802 - named after the event
        self._new_turn()
        self.set_activity("compacting the context" if event.purpose == "compact" else "waiting for the model")

    def on_ThinkingDelta(self, event: ThinkingDelta) -> None:  # noqa: N802
        self.set_activity(None)
        self.thinking += printable(event.text)
        if self.show_thinking and not self.color:
            self.write(event.text)

    def on_TextDelta(self, event: TextDelta) -> None:  # noqa: N802
        self.end_thinking()
        self.set_activity(None)
        self.streamed = True
        if not self.color:
            self.write(event.text)
            return
        for block in self.splitter.feed(printable(event.text)):
            self.finished(block)

    def on_AssistantDone(self, event: AssistantDone) -> None:  # noqa: N802
        self.set_activity(None)
        self.end_thinking(event.message.thinking)
        msg = event.message
        if not self.streamed and msg.text:  # a client that sent no deltas
            self.on_TextDelta(TextDelta(msg.text))
        if not self.color:
            if not self.at_line_start:
                self.write("\n")
            return
        commentary = bool(msg.tool_calls) and not self.committed
        for block in [*self.held, *self.splitter.finish()]:
            self.print_block(block, commentary)
        self.held, self.held_chars = [], 0

    def on_ToolCalled(self, event: ToolCalled) -> None:  # noqa: N802
        self.calls += 1
        self.numbers[event.call.id] = self.last_call = self.calls
        subject, name = subject_of(event.call, event.subject), printable(event.call.name)
        if self.color:
            self.print(Text.assemble((f"[{self.calls}] ", "dim"), (name, "bold"), " ", (subject, "cyan")),
                       overflow="ellipsis", no_wrap=True)
        else:
            self.line(f"[{self.calls}] {name} {subject}")

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
        if not self.color:
            self.line(f"    {owner}{result.word}: {result.rest}")
            if change:
                self.write(diffs.plain(change, "      "))
            return
        took = time.monotonic() - self.tool_started if self.tool_started else 0.0
        style = {"ok": "green", "error": "red", "denied": "yellow", "cancelled": "yellow"}[result.word]
        line = Text.assemble("    ", (owner, "dim"), (f"{result.word}:", style), " ", result.rest)
        if took >= 1.0 and result.word != "denied":
            line.append(f" ({took:.1f}s)", style="dim")
        self.tool_started = 0.0
        self.print(line, overflow="ellipsis", no_wrap=True)
        if change:
            self.print(diffs.coloured(change, "      "))

    def on_Notice(self, event: Notice) -> None:  # noqa: N802
        if event.kind == "checkpoint":  # one per snapshot; counted for the closing line
            self.checkpoints += 1
            return
        if event.kind in STDERR_KINDS:  # diagnostics: render/notes.py shows them on stderr
            return
        text = printable(f"{event.kind}: {event.text}")
        if self.color:
            self.print(Text(text, style="yellow"))
        else:
            self.line(text)
        if event.kind == "compact":  # the summary request that follows takes a while; Compacted clears it
            self.set_activity("compacting the context")

    def on_Compacted(self, event: Compacted) -> None:  # noqa: N802
        self.set_activity(None)
        text = f"context compacted: {event.tokens_before} -> {event.tokens_after} tokens"
        if self.color:
            self.print(Text(text, style="yellow"))
        else:
            self.line(text)

    def on_RunEnd(self, event: RunEnd) -> None:  # noqa: N802
        self.close()
        u = event.usage
        tail = f" ({printable(event.message)})" if event.message else ""
        text = (f"done: {event.status}, {event.steps} steps, {u.prompt_tokens}+{u.completion_tokens} tokens, "
                f"{self.checkpoints} checkpoint{'' if self.checkpoints == 1 else 's'}{tail}")
        if self.color:
            style = "green" if event.status == "completed" else "yellow"
            self.print(Text(text, style=style))
        else:
            self.line(text)

    # ---- output pieces ----------------------------------------------------------------------

    def write(self, text: str) -> None:
        """Plain output: everything goes through here, escaped."""
        self.out.write(printable(text))
        self.out.flush()
        if text:
            self.at_line_start = text.endswith("\n")

    def print(self, view: RenderableType, **options) -> None:
        """Colour output: everything goes through here, each text segment escaped."""
        self.console.print(Escaped(view), **options)

    def line(self, text: str) -> None:
        if not self.at_line_start:
            self.write("\n")
        self.write(text + "\n")

    def say(self, text: str, style: str = "") -> None:
        """A line from the REPL or the approver, styled on a colour terminal."""
        text = printable(text)
        if self.color:
            self.pause()
            self.print(Text(text, style=style))
        else:
            self.line(text)

    def finished(self, block: Block) -> None:
        """A block the splitter closed: held back while it may still be commentary, else printed."""
        if self.committed:
            self.print_block(block, False)
            return
        self.held.append(block)
        self.held_chars += len(block.text)
        if self.held_chars > HOLD_CHARS:  # too long for commentary: this is the answer
            self.committed = True
            held, self.held, self.held_chars = self.held, [], 0
            for block in held:
                self.print_block(block, False)

    def print_block(self, block: Block, commentary: bool) -> None:
        # Rich already starts a list with a blank line.
        if self.printed_blocks and block.first and not (block.kind == "md" and LIST_ITEM.match(block.text)):
            self.console.print()
        self.printed_blocks += 1
        self.print(self.block_view(block, commentary))

    def block_view(self, block: Block, commentary: bool) -> RenderableType:
        if block.kind == "code":
            view: RenderableType = Syntax(block.text, lexer(block.lang), theme=CODE_THEME, word_wrap=True,
                                          padding=(0, 1))
        else:
            view = Markdown(block.text, code_theme=CODE_THEME, hyperlinks=False, style="dim" if commentary else "")
        return Padding(view, (0, 0, 0, 4)) if commentary else view

    def end_thinking(self, full: str = "") -> None:
        """Thinking is over: one dim summary line (or, with --show-thinking, the whole text)."""
        text = (self.thinking or printable(full)).strip()
        self.thinking = ""
        if not text:
            return
        if self.show_thinking and not self.color:
            if not self.at_line_start:
                self.write("\n")
            return
        if self.show_thinking:
            self.print(Padding(Text(text, style="dim italic"), (0, 0, 0, 2)))
            return
        flat = " ".join(text.split())
        short = flat if len(flat) <= 100 else flat[:99] + "…"
        if self.color:
            self.print(Text(f"thinking: {short}", style="dim italic"), overflow="ellipsis", no_wrap=True)
        else:
            self.line(f"thinking: {short}")

    # ---- live area --------------------------------------------------------------------------

    def set_activity(self, label: str | None) -> None:
        self.activity = Activity(label) if label else None
        if label and self.live_ok:
            self.resume()

    def set_queued(self, queued: list[str]) -> None:
        """Messages typed during a turn, shown until they are sent."""
        self.queued = list(queued)
        if queued and self.live_ok:
            self.resume()
        elif queued and not self.color:
            self.line(f"queued: {printable(queued[-1])}")

    def resume(self) -> None:
        if self.live is None:
            from rich.live import Live

            self.live = Live(LiveView(self), console=self.console, transient=True, refresh_per_second=10,
                             redirect_stdout=False, redirect_stderr=False)
            self.live.start()

    def pause(self) -> None:
        """Stop the live area (before an approval prompt or the REPL prompt takes the terminal)."""
        if self.live is not None:
            live, self.live = self.live, None
            live.stop()

    def close(self) -> None:
        self.activity = None
        self.pause()


# The name the CLI used before colour existed; it picks plain text by itself where needed.
PlainRenderer = TerminalRenderer
