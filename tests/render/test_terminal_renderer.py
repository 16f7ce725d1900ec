"""The terminal renderer on recorded event sequences: plain and coloured output against expected text."""

from __future__ import annotations

import io
import re

from loopagent.events import (
    AssistantDone,
    Notice,
    RunEnd,
    TextDelta,
    ThinkingDelta,
    ToolCalled,
    ToolFinished,
    ToolStarted,
    TurnStart,
)
from loopagent.messages import AssistantMessage, ToolCall, ToolResult, Usage
from loopagent.render import diff as diffs
from loopagent.render.markdown import BlockSplitter
from loopagent.render.results import summary
from loopagent.render.terminal import TerminalRenderer

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"


def session_events():
    read = ToolCall("c1", "read_file", '{"path": "a.py"}')
    edit = ToolCall("c2", "edit_file", '{"path": "a.py"}')
    test = ToolCall("c3", "shell", '{"command": "pytest -q"}')
    bad = ToolCall("c4", "shell", '{"command": "git push"}')
    return [
        TurnStart(1),
        ThinkingDelta("The bug is probably in f.\nLet me read it."),
        TextDelta("I'll read the"), TextDelta(" file first."),
        AssistantDone(AssistantMessage("I'll read the file first.", tool_calls=(read,))),
        ToolCalled(read, "a.py"), ToolStarted(read, True),
        ToolFinished(read, ToolResult("c1", "read_file", "     1\tdef f():\n     2\t    return 1")),
        TurnStart(2),
        AssistantDone(AssistantMessage("", tool_calls=(edit, test, bad))),
        ToolCalled(edit, "a.py"), ToolStarted(edit, False), Notice("checkpoint", "abc before edit_file"),
        ToolFinished(edit, ToolResult("c2", "edit_file", "edited a.py\n" + DIFF, display=DIFF)),
        ToolCalled(test, "pytest -q"), ToolStarted(test, False),
        ToolFinished(test, ToolResult("c3", "shell", "exit code 1\n.F..\nFAILED t.py::test_f\n"
                                      "=== 1 failed, 3 passed in 0.1s ===", is_error=True)),
        ToolCalled(bad, "git push"),
        ToolFinished(bad, ToolResult("c4", "shell", "denied: the user did not approve this call", is_error=True)),
        TurnStart(3),
        *[TextDelta(p) for p in ["Fixed `f`.\n\n```py", "thon\ndef f():\n    return 2\n```\n", "\nAll good."]],
        AssistantDone(AssistantMessage("Fixed ...")),
        RunEnd("completed", 3, Usage(300, 30)),
    ]


PLAIN = """\
thinking: The bug is probably in f. Let me read it.
I'll read the file first.
[1] read_file a.py
    ok: 2 lines
[2] edit_file a.py
    ok: edited a.py  +1 -1
      @@ -1,2 +1,2 @@
       def f():
      -    return 1
      +    return 2
[3] shell pytest -q
    error: 1 failed, 3 passed in 0.1s
[4] shell git push
    denied: the user did not approve this call
Fixed `f`.

```python
def f():
    return 2
```

All good.
done: completed, 3 steps, 300+30 tokens, 1 checkpoint
"""

COLOURED_TEXT = """\
thinking: The bug is probably in f. Let me read it.
    I'll read the file first.
[1] read_file a.py
    ok: 2 lines
[2] edit_file a.py
    ok: edited a.py  +1 -1
      @@ -1,2 +1,2 @@
       def f():
      -    return 1
      +    return 2
[3] shell pytest -q
    error: 1 failed, 3 passed in 0.1s
[4] shell git push
    denied: the user did not approve this call
Fixed f.

 def f():
     return 2

All good.
done: completed, 3 steps, 300+30 tokens, 1 checkpoint
"""


def render(events, **kw) -> str:
    out = io.StringIO()
    renderer = TerminalRenderer(out, width=60, **kw)
    for event in events:
        renderer(event)
    return out.getvalue()


def test_plain_output_of_a_session():
    out = render(session_events(), color=False)
    assert out == PLAIN
    assert "\x1b" not in out


def test_coloured_output_of_a_session():
    out = render(session_events(), color=True, live=False)
    text = "\n".join(line.rstrip() for line in ANSI.sub("", out).splitlines()) + "\n"
    assert text == COLOURED_TEXT
    # The words carry their colours: ok green, error red, denied yellow, diff lines green/red.
    assert "\x1b[32mok:" in out and "\x1b[31merror:" in out and "\x1b[33mdenied:" in out
    assert "\x1b[32m+    return 2" in out and "\x1b[31m-    return 1" in out
    # Commentary (text that came with tool calls) is dim and indented; the final answer is not dim.
    assert re.search(r"    \x1b\[2mI'll read the file first", out)
    assert "\x1b[2mAll good" not in out


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_dumb_terminal_gets_plain_text(monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    out = FakeTty()
    renderer = TerminalRenderer(out, width=60)
    for event in session_events():
        renderer(event)
    assert out.getvalue() == PLAIN


def test_no_color_keeps_the_rich_screen_without_colours(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm")
    out = FakeTty()
    renderer = TerminalRenderer(out, width=60, live=False)
    for event in session_events():
        renderer(event)
    raw = out.getvalue()
    text = "\n".join(line.rstrip() for line in ANSI.sub("", raw).splitlines()) + "\n"
    assert text == COLOURED_TEXT  # Markdown rendered: no backticks, no fences
    assert not [code for code in ANSI.findall(raw) if code.endswith("m")]  # no colour: no SGR code at all
    assert "\x1b[32m" in render(session_events(), color=True, live=False, monochrome=False)


def test_show_thinking_streams_the_reasoning():
    events = [TurnStart(1), ThinkingDelta("step one\n"), ThinkingDelta("step two"), TextDelta("Answer."),
              AssistantDone(AssistantMessage("Answer.", thinking="step one\nstep two"))]
    assert render(events, color=False, show_thinking=True) == "step one\nstep two\nAnswer.\n"
    coloured = ANSI.sub("", render(events, color=True, live=False, show_thinking=True))
    assert "step one" in coloured and "step two" in coloured and "thinking:" not in coloured


def test_long_diffs_are_folded_with_a_count():
    big = "--- a/x\n+++ b/x\n@@ -1,0 +1,100 @@\n" + "".join(f"+line {i}\n" for i in range(100))
    result = ToolResult("c", "write_file", "wrote x", display=big)
    call = ToolCall("c", "write_file", "{}")
    out = render([ToolCalled(call, "x"), ToolFinished(call, result)], color=False)
    assert "ok: wrote x  +100 -0" in out
    assert "+line 38" in out and "+line 40" not in out
    assert "… 61 more diff lines" in out
    assert diffs.stats(big) == (100, 0)


def test_tool_line_never_shows_raw_json():
    call = ToolCall("c", "grep", '{"pattern": "TODO", "glob": "*.py"}')
    out = render([ToolCalled(call, "")], color=False)
    assert out == "[1] grep pattern=TODO glob=*.py\n"


def test_summaries_pick_the_line_a_person_needs():
    assert summary("exit code 0\ncollected 4 items\n==== 4 passed in 0.02s ====", False) == "4 passed in 0.02s"
    assert summary("exit code 2\nls: cannot access 'x'", True) == "ls: cannot access 'x' (exit 2)"
    assert summary("Traceback (most recent call last):\n  File x\nValueError: bad", True) == "ValueError: bad"
    assert summary("", False) == "(no output)"


def test_splitter_prints_each_block_once_and_keeps_only_the_open_one():
    splitter = BlockSplitter()
    text = "Intro line\n\n```python\n" + "".join(f"x = {i}\n" for i in range(100)) + "```\nTail"
    blocks = []
    for i in range(0, len(text), 3):
        blocks += splitter.feed(text[i:i + 3])
    assert splitter.open_block().text == "Tail"
    blocks += splitter.finish()
    assert [b.kind for b in blocks] == ["md", "code", "code", "code", "md"]
    assert "\n".join(b.text for b in blocks if b.kind == "code") == "\n".join(f"x = {i}" for i in range(100))
    assert [b.first for b in blocks if b.kind == "code"] == [True, False, False]


def test_results_of_calls_that_ran_together_name_their_call():
    read = ToolCall("r1", "read_file", '{"path": "a.py"}')
    grep = ToolCall("g1", "grep", '{"pattern": "f"}')
    out = io.StringIO()
    render = TerminalRenderer(out, color=False)
    for event in [TurnStart(1), AssistantDone(AssistantMessage("", tool_calls=(read, grep))),
                  ToolCalled(read, "a.py"), ToolCalled(grep, "f"),
                  ToolFinished(read, ToolResult("r1", "read_file", "     1\tdef f():")),
                  ToolFinished(grep, ToolResult("g1", "grep", "a.py:1:def f():"))]:
        render(event)
    assert out.getvalue().splitlines() == [
        "[1] read_file a.py", "[2] grep f", "    [1] ok: 1 line", "    [2] ok: a.py:1:def f():",
    ]
