"""MCP servers that crash, calls cancelled by Ctrl+C, and MCP tools under the policy's rules,
through the real `loop` entry point."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, wait_for
from tests.fakeserver import text, tools
from tests.mcp.test_mcp_e2e import agent, gone, notes, tool_results, user_file


def pids(marker: Path) -> list[int]:
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


def test_a_server_that_dies_is_an_error_result_and_restarts_on_next_use(run_loop, server, workspace, loop_home,
                                                                       tmp_path):
    marker = tmp_path / "started"
    user_file(loop_home, notes(marker))
    server.add(tools(("mcp__notes__die", {})), tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    died = tool_results(server.requests[1])["call_0_mcp__notes__die"]
    assert "stopped during the call" in died["content"]
    assert tool_results(server.requests[2])["call_0_mcp__notes__read_note"]["content"] == "note x: buy milk"
    assert len(pids(marker)) == 2  # started, then restarted once
    wait_for(lambda: all(gone(pid) for pid in pids(marker)), timeout=10)


def test_ctrl_c_during_a_slow_mcp_call_exits_130_and_leaves_no_server(server, workspace, loop_home, tmp_path):
    marker, napping = tmp_path / "started", tmp_path / "napping"
    servers = notes(marker)
    servers["notes"]["env"]["NAPPING"] = str(napping)
    user_file(loop_home, servers)
    server.add(tools(("mcp__notes__nap", {"seconds": 60})), text("never asked"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(workspace), "--base-url", server.url, "--json",
         "--approval", "all", "nap"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=clean_env(loop_home), cwd=workspace)
    try:
        wait_for(lambda: napping.exists() or proc.poll() is not None)
        proc.send_signal(signal.SIGINT)
        # Ending a server that is inside a call takes the SDK up to 2 s of grace and 2 s after SIGTERM;
        # on a loaded 2-core CI machine that and the interpreter's exit have run past 20 s.
        out, err = proc.communicate(timeout=45)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["is_error"] and result["content"].startswith("cancelled by the user")
    assert len(server.requests) == 1
    assert "Traceback" not in err
    wait_for(lambda: all(gone(pid) for pid in pids(marker)), timeout=10)


def test_a_deny_rule_names_an_mcp_tool(run_loop, server, workspace, loop_home, tmp_path):
    user_file(loop_home, notes(tmp_path / "started"))
    config = json.loads((loop_home / "config.json").read_text())
    (loop_home / "config.json").write_text(json.dumps({**config, "deny": ["mcp__notes__read_*"]}))
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace)
    result = tool_results(server.requests[1])["call_0_mcp__notes__read_note"]
    assert result["content"].startswith("denied by policy") and 'deny "mcp__notes__read_*"' in result["content"]
    assert proc.returncode == 0, proc.stderr


def test_an_allow_rule_lets_an_mcp_tool_run_in_edits(run_loop, server, workspace, loop_home, tmp_path):
    user_file(loop_home, notes(tmp_path / "started"))
    config = json.loads((loop_home / "config.json").read_text())
    (loop_home / "config.json").write_text(json.dumps({**config, "allow": ["mcp__notes__read_*"]}))
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace, approval="edits")
    assert proc.returncode == 0, proc.stderr
    assert tool_results(server.requests[1])["call_0_mcp__notes__read_note"]["content"] == "note x: buy milk"


def test_a_rule_about_a_server_that_did_not_start_still_loads(run_loop, server, workspace, loop_home, tmp_path):
    servers = {"gone": {"command": str(tmp_path / "missing")}}
    (loop_home).mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"mcp_servers": servers, "deny": ["mcp__gone__delete_*"]}))
    server.add(text("hello"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert "'gone' did not start" in proc.stderr


def test_a_server_that_never_answers_is_a_warning_after_startup_timeout(run_loop, server, workspace, loop_home,
                                                                        tmp_path):
    silent = {"silent": {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"],
                         "startup_timeout": 1}}
    user_file(loop_home, {**silent, **notes(tmp_path / "started")})
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "MCP server 'silent' did not start: no answer within 1 s" in proc.stderr
    assert tool_results(server.requests[1])["call_0_mcp__notes__read_note"]["content"] == "note x: buy milk"


def test_the_servers_end_with_the_run_not_with_the_process(server, workspace, loop_home, tmp_path):
    # A host that runs several agents in one process (an eval worker, an IDE) must not collect servers.
    from loopagent.run.build import Host
    from loopagent.run.launch import run_agent
    from loopagent.run.spec import Flags, RunSpec

    marker = tmp_path / "started"
    user_file(loop_home, notes(marker))
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    host = Host(env=clean_env(loop_home), home=loop_home, cwd=workspace,
                out=io.StringIO(), err=io.StringIO())
    opts = RunSpec(task="read note x", workspace=workspace, json=True,
                   flags=Flags(base_url=server.url, approval="all", checkpoints=False, ctx_size=16384))
    assert run_agent(opts, host=host) == 0, host.err.getvalue()
    [pid] = pids(marker)
    wait_for(lambda: gone(pid), timeout=10)  # this process goes on; the server did not wait for its exit
    assert '"note x: buy milk"' in host.out.getvalue()
