"""MCP servers through the real `loop` entry point: a FastMCP server (tests/mcpserver.py) over stdio,
the fake model server calling its tools, results read back from the requests the model got."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.fakeserver import text, tools
from tests.loop.test_signals_headless import gone  # a zombie counts as gone: nothing runs

SERVER = str(Path(__file__).resolve().parent.parent / "mcpserver.py")


def notes(marker: Path, **extra) -> dict:
    return {"notes": {"command": sys.executable, "args": [SERVER], "env": {"MARKER": str(marker)}, **extra}}


def user_file(loop_home: Path, servers: dict) -> None:
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"mcp_servers": servers}))


def tool_results(request: dict) -> dict[str, dict]:
    return {m["tool_call_id"]: m for m in request["messages"] if m["role"] == "tool"}


def agent(run_loop, server, ws: Path, *extra: str, approval: str = "all", timeout: float = 60):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", approval,
                    *extra, "use the notes", timeout=timeout)


def test_model_calls_an_mcp_tool_and_reads_its_text(run_loop, server, workspace, loop_home, tmp_path):
    marker = tmp_path / "started"
    user_file(loop_home, notes(marker))
    server.add(tools(("mcp__notes__read_note", {"name": "shopping"})), text("You need milk."))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert "mcp__notes__read_note" in offered and "mcp__notes__die" in offered
    (result,) = tool_results(server.requests[1]).values()
    assert result["content"] == "note shopping: buy milk"
    # the server's stderr went to its log, not to the terminal
    assert "notes server starting" not in proc.stderr + proc.stdout
    assert "notes server starting" in (loop_home / "logs" / "mcp-notes.log").read_text()
    # no server process outlives the run
    pids = [int(line) for line in marker.read_text().split()]
    wait_for(lambda: all(gone(pid) for pid in pids), timeout=10)


def test_a_tool_that_raises_is_an_error_result_and_the_run_goes_on(run_loop, server, workspace, loop_home, tmp_path):
    user_file(loop_home, notes(tmp_path / "started"))
    server.add(tools(("mcp__notes__explode", {})), tools(("mcp__notes__read_note", {"name": "a"})), text("done"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    failed = tool_results(server.requests[1])["call_0_mcp__notes__explode"]
    assert "exploded" in failed["content"]
    results = [e for e in map(json.loads, proc.stdout.splitlines()) if e.get("type") == "tool_result"]
    assert [r["is_error"] for r in results] == [True, False]
    assert len(server.requests) == 3
    assert "buy milk" in tool_results(server.requests[2])["call_0_mcp__notes__read_note"]["content"]


def test_a_call_past_tool_timeout_is_an_error_result_within_a_second(run_loop, server, workspace, loop_home,
                                                                       tmp_path):
    user_file(loop_home, notes(tmp_path / "started", tool_timeout=1))
    arrived: list[float] = []

    def at(reply):
        def answer(body):
            arrived.append(time.monotonic())
            return reply
        return answer

    server.add(at(tools(("mcp__notes__nap", {"seconds": 30}))), at(text("too slow")))
    proc = agent(run_loop, server, workspace, timeout=40)
    assert proc.returncode == 0, proc.stderr
    (slow,) = tool_results(server.requests[1]).values()
    assert "did not answer within 1 s" in slow["content"]
    assert arrived[1] - arrived[0] < 1 + 1


def test_mcp_config_flag_declares_servers(run_loop, server, workspace, tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcp_servers": notes(tmp_path / "started")}))
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace, "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    (result,) = tool_results(server.requests[1]).values()
    assert result["content"] == "note x: buy milk"


def test_bad_mcp_config_is_one_line_and_exit_2(run_loop, server, workspace, tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcp_servers": {"x": {"args": []}}}))
    proc = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--mcp-config", str(config), "hi")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "command" in proc.stderr and "Traceback" not in proc.stderr


def test_a_project_file_server_is_never_started_and_warned_once(run_loop, server, workspace, tmp_path):
    marker = tmp_path / "started"
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text(json.dumps({"mcp_servers": notes(marker)}))
    server.add(text("hello"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert proc.stderr.count("mcp_servers") == 1, proc.stderr
    assert all(not t["function"]["name"].startswith("mcp__") for t in server.requests[0]["tools"])


def test_a_project_file_with_a_malformed_server_still_runs(run_loop, server, workspace):
    # another agent's format, or a hostile file: dropped before validation, so loop still starts
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text(json.dumps({"mcp_servers": {"x": {"cmd": 3}}}))
    server.add(text("hello"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("mcp_servers") == 1, proc.stderr


def test_a_server_that_fails_to_start_is_one_warning_and_the_run_goes_on(run_loop, server, workspace, loop_home,
                                                                          tmp_path):
    user_file(loop_home, {**notes(tmp_path / "started"), "broken": {"command": str(tmp_path / "no-such-program")}})
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "broken" in line]
    assert len(warnings) == 1 and "did not start" in warnings[0]
    assert "note x: buy milk" in tool_results(server.requests[1])["call_0_mcp__notes__read_note"]["content"]


@pytest.mark.parametrize("approval", ["edits"])
def test_mcp_tools_need_approval_in_edits_headless(run_loop, server, workspace, loop_home, tmp_path, approval):
    marker = tmp_path / "started"
    user_file(loop_home, notes(marker))
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace, approval=approval)
    assert proc.returncode == 4, proc.stderr
