"""The terminal shows the language server's block under the edit's diff; the session keeps it."""

from __future__ import annotations

import io

from loopagent.details import Details, details_from, details_record
from loopagent.events import ToolCalled, ToolFinished
from loopagent.messages import ToolCall, ToolResult
from loopagent.render.terminal import TerminalRenderer
from loopagent.tools.diffs import changed

DIFF = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = y\n"
BLOCK = "1 new error:\ncalc.py:1:5 undefined name 'y'"


def test_the_block_follows_the_diff_on_the_terminal():
    out = io.StringIO()
    r = TerminalRenderer(out, color=False, live=False, width=100)
    call = ToolCall("c1", "edit_file", '{"path": "calc.py"}')
    details = Details("ok", added=1, removed=1, diff=DIFF, diagnostics=BLOCK)
    r(ToolCalled(call, "calc.py"))
    r(ToolFinished(call, ToolResult("c1", "edit_file", f"edited calc.py\n\n{BLOCK}", display=DIFF, details=details)))
    shown = out.getvalue().splitlines()
    at = shown.index("      +x = y")
    assert shown[at + 1:] == ["      1 new error:", "      calc.py:1:5 undefined name 'y'"]


def test_the_session_record_keeps_the_block_and_reads_it_back():
    details = Details("ok", added=1, removed=1, diff=DIFF, diagnostics=BLOCK)
    assert details_from(details_record(details)) == details
    assert "diagnostics" not in details_record(changed(DIFF))
    assert details_from({**details_record(details), "diagnostics": 5}) is None
