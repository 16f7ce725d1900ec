"""Where the renderer's lines go: one interface, two sinks.

`RichSink` for a terminal: styles, Markdown, highlighted code, a live area with a spinner and elapsed
times; with NO_COLOR (`monochrome`) the same screen without colours or other SGR styles. `PlainSink`
for TERM=dumb, pipes and files: the same words as plain text, no escape codes at all.

Every string reaching a sink is already escaped (`safe.printable`); the Rich sink escapes each
printed segment again (`Escaped`), so text that Markdown decodes (an entity such as `&#x202e;`)
cannot reach the terminal raw either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import IO, Protocol

from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound
from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text

from loopagent.counts import counted
from loopagent.render import diff as diffs
from loopagent.render.answer import Answer
from loopagent.render.lines import Line, text_of
from loopagent.render.live import Activity, LiveArea, follow_size, terminal_size
from loopagent.render.markdown import Block
from loopagent.render.safe import printable

LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")
CODE_THEME = "monokai"


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


def styled(line: Line) -> Text:
    """A `Line` as Rich text."""
    return Text.assemble(*line)


class Sink(Protocol):
    """What the renderer writes to; `PlainSink` and `RichSink` are the two kinds."""

    color: bool  # the Rich screen (styles, Markdown, live area)
    typing: str  # a message being typed during a turn (the REPL's type-ahead), shown live

    @property
    def width(self) -> int: ...  # cells per line, for clipping
    @property
    def room(self) -> int | None: ...  # cells before the screen wraps a line, now; None: no screen
    def row(self, line: Line, clip: bool = True) -> None: ...  # one line, cut at the width when `clip`
    def rows(self, lines: list[Line], clip: bool = True) -> None: ...
    # A line of the REPL's or the approver's; `whole`: never broken by the layout (a command to copy).
    def say(self, text: str, style: str = "", whole: bool = False) -> None: ...
    def diff(self, diff: str, indent: str, max_lines: int = ..., headers: bool = False) -> None: ...
    def new_turn(self) -> None: ...  # a model request begins
    def answer(self, text: str) -> None: ...  # answer text as it streams
    def end_answer(self, with_calls: bool) -> None: ...  # the turn's text is complete
    def thinking(self, text: str) -> None: ...  # reasoning as it streams
    def thinking_over(self, text: str, streamed: bool) -> None: ...  # reasoning ended (--show-thinking)
    def set_activity(self, label: str | None) -> None: ...  # the spinner's label; None: no spinner
    def set_queued(self, queued: list[str]) -> None: ...  # messages typed during a turn
    def resume(self) -> None: ...  # draw the live area again
    def pause(self) -> None: ...  # erase the live area and give the terminal back


class PlainSink:
    """Plain text, no escape codes: for TERM=dumb, pipes and files. Answer text is written as it streams."""

    color = False

    def __init__(self, out: IO[str], width: int | None = None, show_thinking: bool = False):
        self.out = out
        size = terminal_size(out)
        self.width = width or (size.columns if size else 80)
        self.fixed_width = width
        self.show_thinking = show_thinking
        self.at_line_start = True
        self.typing = ""

    @property
    def room(self) -> int | None:
        """Cells a line may take before the screen wraps it, asked now (the terminal may have been
        resized); None for a pipe or a file, which keep lines whole."""
        size = terminal_size(self.out)
        return self.fixed_width or (size.columns if size and size.columns > 0 else None)

    def write(self, text: str) -> None:
        """Everything goes through here, escaped."""
        self.out.write(printable(text))
        self.out.flush()
        if text:
            self.at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        if not self.at_line_start:
            self.write("\n")
        self.write(text + "\n")

    def row(self, line: Line, clip: bool = True) -> None:
        self.line(text_of(line))

    def rows(self, lines: list[Line], clip: bool = True) -> None:
        for line in lines:
            self.row(line, clip)

    def say(self, text: str, style: str = "", whole: bool = False) -> None:
        self.line(text)

    def diff(self, diff: str, indent: str, max_lines: int = diffs.MAX_LINES, headers: bool = False) -> None:
        if not self.at_line_start:
            self.write("\n")
        self.write(diffs.plain(diff, indent, max_lines, headers, self.room))

    def new_turn(self) -> None:
        pass

    def answer(self, text: str) -> None:
        self.write(text)

    def end_answer(self, with_calls: bool) -> None:
        if not self.at_line_start:
            self.write("\n")

    def thinking(self, text: str) -> None:
        if self.show_thinking:
            self.write(text)

    def thinking_over(self, text: str, streamed: bool) -> None:
        """Thinking ended; with --show-thinking it was written as it came (or is written now)."""
        if self.show_thinking and not streamed:
            self.write(text)
        if not self.at_line_start:
            self.write("\n")

    def set_activity(self, label: str | None) -> None:
        pass

    def set_queued(self, queued: list[str]) -> None:
        if queued:
            self.line(f"queued: {printable(queued[-1])}")

    def resume(self) -> None:
        pass

    def pause(self) -> None:
        pass


class RichSink:
    """A terminal: styled lines, Markdown blocks, a live area. `monochrome` drops the styles only (NO_COLOR)."""

    color = True

    def __init__(self, out: IO[str], *, monochrome: bool = False, live: bool = True, width: int | None = None,
                 show_thinking: bool = False):
        self.out = out
        # NO_COLOR: no colour system, so Rich writes no SGR codes at all (bold and dim go with the colours);
        # the layout stays (Markdown, code blocks, the live area with its elapsed times).
        extra = {"color_system": None} if monochrome else {}
        self.console = Console(file=out, force_terminal=True, no_color=monochrome, width=width, highlight=False,
                               emoji=False, soft_wrap=False, **extra)
        self.fixed_width = width is not None
        self.live_ok = live
        self.show_thinking = show_thinking
        self.area: LiveArea | None = None
        self.activity: Activity | None = None
        self.queued: list[str] = []
        self.typing = ""
        self.new_turn()

    @property
    def width(self) -> int:
        return self.console.width

    @property
    def room(self) -> int:
        """Cells a line may take before the terminal wraps it, at its size now."""
        if not self.fixed_width:
            follow_size(self.console, self.out)
        return self.console.width

    def new_turn(self) -> None:
        self.ans = Answer()
        self.printed_blocks = 0
        self.thought = ""  # thinking of this turn so far, counted in the live area

    def print(self, view: RenderableType, **options) -> None:
        """Everything goes through here, each text segment escaped, above the live area."""
        if self.area is not None:
            with self.area.printing():
                self.console.print(Escaped(view), **options)
            return
        if not self.fixed_width:
            follow_size(self.console, self.out)
        self.console.print(Escaped(view), **options)

    def row(self, line: Line, clip: bool = True) -> None:
        if clip:
            self.print(styled(line), overflow="ellipsis", no_wrap=True)
        else:
            self.print(styled(line))

    def rows(self, lines: list[Line], clip: bool = True) -> None:
        for line in lines:
            self.row(line, clip)

    def say(self, text: str, style: str = "", whole: bool = False) -> None:
        self.pause()
        self.print(Text(text, style=style), soft_wrap=whole)  # soft: the terminal wraps it, no newline is added

    def diff(self, diff: str, indent: str, max_lines: int = diffs.MAX_LINES, headers: bool = False) -> None:
        self.print(diffs.coloured(diff, indent, max_lines, headers, width=self.room))

    def answer(self, text: str) -> None:
        with self.locked():
            blocks = self.ans.feed(text)
        for block in blocks:
            self.print_block(block, False)

    def end_answer(self, with_calls: bool) -> None:
        with self.locked():
            blocks, commentary = self.ans.finish(with_calls)
        for block in blocks:
            self.print_block(block, commentary)

    def thinking(self, text: str) -> None:
        self.thought += text

    def thinking_over(self, text: str, streamed: bool) -> None:
        self.thought = ""
        if self.show_thinking:
            self.print(Padding(Text(text, style="dim italic"), (0, 0, 0, 2)))

    def print_block(self, block: Block, commentary: bool) -> None:
        # Rich already starts a list with a blank line.
        if self.printed_blocks and block.first and not (block.kind == "md" and LIST_ITEM.match(block.text)):
            self.print(Text(""))
        self.printed_blocks += 1
        self.print(block_view(block, commentary))

    # ---- the live area ------------------------------------------------------------------------

    def locked(self):
        """The live area's lock (its timer reads what the main thread changes), or a no-op."""
        from contextlib import nullcontext

        return self.area.lock if self.area is not None else nullcontext()

    def view(self) -> RenderableType:
        """What the live area shows: held text, the open block, the activity, queued and typed messages."""
        parts: list[RenderableType] = [block_view(b, False) for b in self.ans.pending()]
        if self.thought and not self.show_thinking:
            parts.append(Text(f"thinking… {counted(len(self.thought.split()), 'word')}", style="dim italic"))
        if self.activity is not None:
            parts.append(self.activity)
        parts += [Text(f"queued: {printable(q)}", style="yellow") for q in list(self.queued)]
        if self.typing:
            parts.append(Text(f"> {printable(self.typing)}", style="dim"))
        return Escaped(Group(*parts))

    def set_activity(self, label: str | None) -> None:
        self.activity = Activity(label) if label else None
        if label and self.live_ok:
            self.resume()

    def set_queued(self, queued: list[str]) -> None:
        self.queued = list(queued)
        if queued and self.live_ok:
            self.resume()

    def resume(self) -> None:
        if self.area is None:
            self.area = LiveArea(self.console, self.out, self.view)
            self.area.start()

    def pause(self) -> None:
        if self.area is not None:
            area, self.area = self.area, None
            area.stop()


def block_view(block: Block, commentary: bool) -> RenderableType:
    """A block of the answer: highlighted code, or Markdown (commentary dim and indented)."""
    if block.kind == "code":
        view: RenderableType = Syntax(block.text, lexer(block.lang), theme=CODE_THEME, word_wrap=True,
                                      padding=(0, 1))
    else:
        view = Markdown(block.text, code_theme=CODE_THEME, hyperlinks=False, style="dim" if commentary else "")
    return Padding(view, (0, 0, 0, 4)) if commentary else view
