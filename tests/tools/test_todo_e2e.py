"""todo_write through the real CLI: a `todo` line in --json, the list in the session file, and the list in the
requests after a compaction summarised its call away."""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.context.compact import TODO_HEAD
from tests.context.test_context_e2e import agent, base_tokens, ctx_for, dispatch, events, write_lines
from tests.fakeserver import text, tools

ITEMS = [{"content": "read every file", "status": "in_progress"}, {"content": "summarise them", "status": "pending"}]


def test_todo_line_session_record_and_the_list_after_compaction(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(12):
        write_lines(ws / f"f{k}.txt", 12, f"f{k}")
    task = "Summarise what the twelve files say."
    limit = base_tokens(run_loop, ws, task) + 1800
    turns = [tools(("todo_write", {"todos": ITEMS}))]
    turns += [tools(("read_file", {"path": f"f{k}.txt"})) for k in range(12)] + [text("They list balances.")]
    server.add(*[dispatch(turns)] * 20)

    proc = agent(run_loop, server, ws, "--ctx-size", ctx_for(limit), task=task)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = events(proc.stdout)
    assert [e for e in out if e["type"] == "todo"] == [{"type": "todo", "todos": ITEMS}]
    session = next(e["path"] for e in out if e["type"] == "session")
    records = [json.loads(line) for line in Path(session).read_text().splitlines()]
    kept = [r for r in records if r.get("role") == "tool" and r.get("name") == "todo_write"]
    assert kept and kept[0]["details"]["todos"] == [[i["content"], i["status"]] for i in ITEMS]

    first = ["tools" in b for b in server.requests].index(False)  # the compaction request
    messages = server.requests[first + 1]["messages"]
    calls = [c["function"]["name"] for m in messages for c in m.get("tool_calls", [])]
    assert calls and "todo_write" not in calls  # the call itself was summarised away ...
    after = json.dumps(messages)
    assert TODO_HEAD in after and "[>] read every file" in after  # ... its list was not
    assert TODO_HEAD in json.dumps(server.requests[-1]["messages"])
