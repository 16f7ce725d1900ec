"""`loop config` shows an MCP server's env names, never their values (they are often tokens)."""

from __future__ import annotations

import json


def test_loop_config_masks_mcp_server_env_values(run_loop, loop_home, tmp_path):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps(
        {"mcp_servers": {"notes": {"command": "python3", "args": ["x.py"], "env": {"TOKEN": "MARKERx9f3"}}}}))
    proc = run_loop("config", "-C", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "MARKERx9f3" not in proc.stdout + proc.stderr
    assert '"TOKEN": "***"' in proc.stdout
