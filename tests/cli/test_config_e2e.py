"""Configuration through the real CLI and the fake server: what the server receives is what counts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakeserver import text


def agent(run_loop, server, ws: Path, *extra: str, cwd: Path | None = None, env: dict | None = None):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints",
                    *extra, "say hi", cwd=cwd, env=env)


def test_model_precedence_user_file_then_env_then_flag(run_loop, server, loop_home, tmp_path):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"model": "from-user-file"}))
    server.add(text("hi"), text("hi"), text("hi"))
    assert agent(run_loop, server, tmp_path).returncode == 0
    assert agent(run_loop, server, tmp_path, env={"LOOP_MODEL": "from-env"}).returncode == 0
    assert agent(run_loop, server, tmp_path, "-m", "from-flag", env={"LOOP_MODEL": "from-env"}).returncode == 0
    assert [r["model"] for r in server.requests] == ["from-user-file", "from-env", "from-flag"]


def test_agents_md_root_first_down_to_the_working_directory(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    (ws / "pkg" / "deep").mkdir(parents=True)
    (ws / "other").mkdir()
    (ws / "AGENTS.md").write_text("ROOT-RULE: run make test before finishing.\n")
    (ws / "pkg" / "AGENTS.md").write_text("PKG-RULE: this package uses tabs.\n")
    (ws / "pkg" / "deep" / "AGENTS.md").write_text("DEEP-RULE: below the working directory.\n")
    (ws / "other" / "AGENTS.md").write_text("OTHER-RULE: a sibling directory.\n")
    server.add(text("hi"))
    proc = agent(run_loop, server, ws, cwd=ws / "pkg")
    assert proc.returncode == 0, proc.stderr
    system = server.requests[0]["messages"][0]
    assert system["role"] == "system"
    prompt = system["content"]
    assert prompt.index("ROOT-RULE") < prompt.index("PKG-RULE")
    assert "## AGENTS.md" in prompt and "## pkg/AGENTS.md" in prompt
    assert "DEEP-RULE" not in prompt and "OTHER-RULE" not in prompt
    assert "pkg/" in prompt and str(tmp_path) not in prompt and str(Path.home()) not in prompt


def test_version_is_one_line_and_exit_0(run_loop):
    from loopagent import __version__

    proc = run_loop("--version", timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"loop {__version__}\n", "")
