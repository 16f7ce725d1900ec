"""A tool result's typed details survive the session file: a resumed session's old results render
from them (outcome, exit code, line counts, diff) instead of falling back to the text."""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.details import Details
from loopagent.messages import ToolResult, from_record, to_record
from loopagent.session import load
from tests.conftest import where_shells_run
from tests.fakeserver import text, tools


def test_details_round_trip_through_a_record_and_only_non_defaults_are_written():
    details = Details(outcome="error", exit_code=2, lines=3, diff="--- a\n+++ a\n", clipped=True)
    result = ToolResult("c1", "shell", "exit code 2\nboom", is_error=True, details=details)
    rec = to_record(result)
    assert rec["details"] == {"outcome": "error", "exit_code": 2, "lines": 3, "diff": "--- a\n+++ a\n",
                              "clipped": True}
    assert from_record(json.loads(json.dumps(rec))).details == details


def test_a_result_without_details_writes_none_and_reads_none():
    rec = to_record(ToolResult("c1", "read_file", "1\thello"))
    assert "details" not in rec and from_record(rec).details is None


def test_malformed_details_lose_the_details_never_the_message():
    base = {"role": "tool", "call_id": "c1", "name": "shell", "content": "ok", "is_error": False}
    for bad in ({"outcome": "exploded"}, {"exit_code": "1"}, {"clipped": "yes"}, {"lines": True}, [1, 2], "ok"):
        msg = from_record({**base, "details": bad})
        assert msg.content == "ok" and msg.details is None, bad
    later = from_record({**base, "details": {"exit_code": 0, "a_field_from_a_later_version": 1}})
    assert later.details == Details(exit_code=0)


def test_a_real_run_saves_each_results_details_and_load_returns_them(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    server.add(tools(("shell", {"command": "printf 'x\\ny\\n'; exit 3"}),
                     ("write_file", {"path": "a.txt", "content": "one\nTWO\nthree\n"})),
               text("done"))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), "go")
    assert proc.returncode == 0, proc.stderr
    session = Path(next(json.loads(line)["path"] for line in proc.stdout.splitlines()
                        if json.loads(line).get("type") == "session"))
    shell, write = [m for m in load(session).history if isinstance(m, ToolResult)]
    assert shell.details is not None and shell.details.exit_code == 3 and shell.details.lines == 2
    assert shell.details.outcome == "error"
    assert write.details is not None and write.details.added == 2 and write.details.removed == 1
    assert "+TWO" in write.details.diff
