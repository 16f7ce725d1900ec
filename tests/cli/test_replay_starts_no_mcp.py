"""`loop replay` starts no MCP server: its tools act outside the copy, so their calls are not made again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import text, tools
from tests.mcp.test_mcp_e2e import notes, user_file


def test_a_replay_shows_mcp_calls_as_not_replayed_and_never_starts_the_server(run_loop, server, workspace,
                                                                             loop_home, tmp_path: Path):
    marker = tmp_path / "started"
    user_file(loop_home, notes(marker))
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True, timeout=30)
    (workspace / "a.txt").write_text("one\n")
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), tools(("read_file", {"path": "a.txt"})), text("ok"))
    live = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), "read note x")
    assert live.returncode == 0, live.stderr
    results = [json.loads(x) for x in live.stdout.splitlines() if '"tool_result"' in x]
    assert results[0]["content"] == "note x: buy milk"
    assert len(marker.read_text().split()) == 1  # the live run started the server once

    replay = run_loop("replay", "last", cwd=workspace, timeout=60)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    rows = [line.split() for line in replay.stdout.splitlines()]
    assert rows[1][:2] == ["1", "mcp__notes__read_note"] and rows[1][-3:] == ["not", "replayed", "skipped"]
    assert rows[2][:2] == ["2", "read_file"] and rows[2][-1] == "same"
    assert rows[-1] == "replay: the replayed call has the recorded outcome (1 MCP call not replayed)".split()
    assert len(marker.read_text().split()) == 1  # the replay started no server
