"""Result lines come from a result's typed details; results without details (old sessions) fall back to its text."""

from __future__ import annotations

import io
import re

from loopagent.details import Details
from loopagent.events import ToolCalled, ToolFinished
from loopagent.messages import ToolCall, ToolResult
from loopagent.render.terminal import TerminalRenderer

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
PAGE = "     1\tdef f():\n     2\t    return 1\n[lines 1-2 of 10 in a.py; 8 more; continue with offset=2]"


def shown(name: str, result: ToolResult, color: bool = False) -> list[str]:
    """The lines a terminal shows for one call and its result (without the call line)."""
    out = io.StringIO()
    r = TerminalRenderer(out, color=color, live=False, width=120)
    call = ToolCall("c1", name, "{}")
    r(ToolCalled(call, "x"))
    r(ToolFinished(call, result))
    return [ln.rstrip() for ln in ANSI.sub("", out.getvalue()).splitlines()[1:]]


def test_a_read_says_how_much_of_the_file_from_its_line_counts():
    with_details = ToolResult("c1", "read_file", PAGE, details=Details("ok", lines=2, total_lines=10))
    assert shown("read_file", with_details) == ["    ok: 2 of 10 lines"]
    whole = ToolResult("c1", "read_file", PAGE.rsplit("\n", 1)[0], details=Details("ok", lines=2, total_lines=2))
    assert shown("read_file", whole) == ["    ok: 2 lines"]


def test_a_result_without_details_is_read_from_its_text():
    old = ToolResult("c1", "read_file", PAGE)
    assert shown("read_file", old) == ["    ok: 2 lines; [lines 1-2 of 10 in a.py; 8 more; continue with offset=2]"]
    search = ToolResult("c1", "search", "a.py:1: x = 1\nlog.txt:3: 4 passed in 0.1s")
    assert shown("search", search) == ["    ok: log.txt:3: 4 passed in 0.1s"]  # the old guess: a test verdict


def test_a_search_hit_that_looks_like_a_verdict_is_not_taken_for_one():
    search = ToolResult("c1", "search", "a.py:1: x = 1\nlog.txt:3: 4 passed in 0.1s", details=Details("ok"))
    assert shown("search", search) == ["    ok: a.py:1: x = 1"]


def test_a_shell_result_takes_its_exit_code_from_the_details():
    # The text's header says 0; the details say what the command did.
    result = ToolResult("c1", "shell", "exit code 0\nmake: *** [all] Error 2", is_error=True,
                        details=Details("error", exit_code=2, lines=1))
    assert shown("shell", result) == ["    error: exit 2, 1 line", "      make: *** [all] Error 2"]
    tests = ToolResult("c1", "shell", "exit code 0\ncollected 4 items\n==== 4 passed in 0.02s ====",
                       details=Details("ok", exit_code=0, lines=2))
    assert shown("shell", tests) == ["    ok: exit 0, 2 lines", "      collected 4 items",
                                     "      ==== 4 passed in 0.02s ===="]
    # A verdict the first lines do not show is named on the result line.
    long = "exit code 1\n" + "".join(f"line {i}\n" for i in range(20)) + "=== 1 failed, 3 passed in 0.1s ==="
    lines = shown("shell", ToolResult("c1", "shell", long, is_error=True, details=Details("error", exit_code=1,
                                                                                       lines=21)))
    assert lines[0] == "    error: exit 1, 21 lines; 1 failed, 3 passed in 0.1s"
    assert lines[1:] == ["      line 0", "      line 1", "      line 2", "      line 3", "      … +17 lines"]
    quiet = ToolResult("c1", "shell", "exit code 0\n(no output)", details=Details("ok", exit_code=0, lines=0))
    assert shown("shell", quiet) == ["    ok: exit 0, no output"]


def test_a_cancelled_call_says_cancelled_and_the_old_text_said_error():
    text = "cancelled by the user after 1.5 s; the command and its processes were killed\npartial output"
    killed = ToolResult("c1", "shell", text, is_error=True, details=Details("cancelled", lines=1))
    assert shown("shell", killed) == ["    cancelled: by the user after 1.5 s; the command and its processes were killed"]
    assert shown("shell", killed, color=True)[0].startswith("    cancelled: by the user")
    old = ToolResult("c1", "shell", text, is_error=True)
    assert shown("shell", old) == [f"    error: {text.splitlines()[0]}"]


def test_a_denial_with_details_shows_its_reason():
    denied = ToolResult("c1", "shell", "denied by policy: pushes need a person (git push)", is_error=True,
                        details=Details("denied"))
    assert shown("shell", denied) == ["    denied: pushes need a person (git push)"]


def test_an_edit_shows_the_diff_from_its_details_not_from_the_display():
    edit = ToolResult("c1", "edit_file", "edited a.py: replaced 1 line", details=Details("ok", added=1, removed=1,
                                                                                         diff=DIFF))
    lines = shown("edit_file", edit)
    assert lines[0] == "    ok: edited a.py: replaced 1 line  +1 -1"
    assert "      -    return 1" in lines and "      +    return 2" in lines
    old = ToolResult("c1", "edit_file", "edited a.py: replaced 1 line")  # no display, no details: no diff
    assert shown("edit_file", old) == ["    ok: edited a.py: replaced 1 line"]
