"""`loop mcp list` against the FastMCP test server, through the real entry point."""

from __future__ import annotations

import json

from tests.mcp.test_mcp_e2e import notes, user_file


def test_mcp_list_shows_started_servers_their_tools_and_failures(run_loop, workspace, loop_home, tmp_path):
    user_file(loop_home, {**notes(tmp_path / "started"), "broken": {"command": str(tmp_path / "missing")}})
    proc = run_loop("mcp", "list", "-C", str(workspace))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert "notes: started, 4 tools" in lines
    assert "  mcp__notes__read_note  Read one note by name." in lines  # the description's first line only
    assert any(line.startswith("broken: not started: FileNotFoundError") for line in lines)
    assert "Notes are short texts" not in proc.stdout


def test_mcp_list_with_a_config_file_and_none_configured(run_loop, workspace, tmp_path):
    assert "no MCP servers configured" in run_loop("mcp", "list", "-C", str(workspace)).stdout
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": notes(tmp_path / "started")}))
    proc = run_loop("mcp", "list", "-C", str(workspace), "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert "  mcp__notes__nap        Sleep for some seconds, then answer." in proc.stdout.splitlines()  # aligned
