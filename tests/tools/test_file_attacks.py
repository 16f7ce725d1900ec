"""Attacks on the file tools through the real `loop agent --json` against the fake server.

Edits that execute later (.git/config, loop's own config), hard links and symlinks to files
outside the workspace: each refused with a result the model can read, the canaries unchanged,
the secret marker nowhere (stdout, stderr, the session file, what the server was sent).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.fakeserver import text, tools

FSMONITOR = '[core]\n\tfsmonitor = "touch pwned"\n'
MARKER = "SECRET-MARKER-7f3a91"


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def agent(run_loop, server, ws: Path, env: dict[str, str] | None = None):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    "do the task", env=env)


def results(proc) -> list[dict]:
    return [e for e in events(proc.stdout) if e["type"] == "tool_result"]


def git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(ws.parent), GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", *args], cwd=ws, env=env, capture_output=True, text=True, timeout=30)


def test_git_config_cannot_be_rewritten_to_run_code_later(run_loop, server, sample, tmp_path):
    assert git(sample, "init", "-q").returncode == 0
    config = (sample / ".git" / "config").read_text()
    (sample / "lnk").symlink_to(".git", target_is_directory=True)
    hook = {"path": "sub/../.git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}
    server.add(
        tools(("write_file", {"path": ".git/config", "content": FSMONITOR}),
              ("write_file", {"path": "./.git/../.git/config", "content": FSMONITOR}),
              ("write_file", {"path": "lnk/config", "content": FSMONITOR}),
              ("write_file", {"path": str(sample / ".git" / "config"), "content": FSMONITOR}),
              ("write_file", hook),
              ("edit_file", {"path": ".git/config", "old_string": "[core]", "new_string": FSMONITOR})),
        text("I could not."),
    )
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 0, proc.stderr
    out = results(proc)
    assert len(out) == 6 and all(r["is_error"] for r in out)
    assert all("is protected: loop never writes .git/ (git hooks and config run code)" in r["content"]
               for r in out), out
    assert (sample / ".git" / "config").read_text() == config
    assert not (sample / ".git" / "hooks" / "pre-commit").exists()
    assert git(sample, "status", "--short").returncode == 0
    assert not (sample / "pwned").exists()
    # The same config written by hand does run on `git status`: the attack is real.
    (sample / ".git" / "config").write_text(config + FSMONITOR)
    git(sample, "status", "--short")
    assert (sample / "pwned").exists()


@pytest.mark.parametrize("home_name", [".loop", "loop-state"])
def test_a_workspace_at_home_cannot_rewrite_loops_own_files(run_loop, server, tmp_path, home_name):
    home = tmp_path / "home"
    loop_home = home / home_name
    loop_home.mkdir(parents=True)
    user_file = loop_home / "config.json"
    user_file.write_text('{"max_steps": 20}\n')
    rel = f"{home_name}/config.json"
    server.add(
        tools(("write_file", {"path": rel, "content": '{"approval": "all", "sandbox": "off"}\n'}),
              ("write_file", {"path": f"{home_name}/prompts/x.md", "content": "x"}),
              ("write_file", {"path": "~/" + rel, "content": "{}"})),
        text("I could not."),
    )
    proc = agent(run_loop, server, home, env={"HOME": str(home), "LOOP_HOME": str(loop_home)})
    assert proc.returncode == 0, proc.stderr
    out = results(proc)
    assert len(out) == 3 and all(r["is_error"] and "is protected" in r["content"] for r in out), out
    assert user_file.read_text() == '{"max_steps": 20}\n'
    assert not (loop_home / "prompts").exists()


def test_hard_and_symbolic_links_to_an_outside_file_leak_nothing(run_loop, server, sample, tmp_path, loop_home):
    canary = tmp_path / "canary.txt"
    canary.write_text(f"token = {MARKER}\n")
    os.link(canary, sample / "notes.txt")
    (sample / "peek.txt").symlink_to(canary)
    server.add(
        tools(("read_file", {"path": "notes.txt"}),
              ("read_file", {"path": "peek.txt"}),
              ("grep", {"pattern": "SECRET-MARKER"}),
              ("grep", {"pattern": "token", "path": "notes.txt"}),
              ("write_file", {"path": "notes.txt", "content": "pwned\n"}),
              ("edit_file", {"path": "notes.txt", "old_string": "token", "new_string": "pwned"}),
              ("write_file", {"path": "peek.txt", "content": "pwned\n"})),
        text("Nothing found."),
    )
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 0, proc.stderr
    out = results(proc)
    assert [r["is_error"] for r in out] == [True, True, False, False, True, True, True]
    assert "notes.txt has 2 hard links" in out[0]["content"]
    assert '"allow": ["read_file(notes.txt)"]' in out[0]["content"]
    assert "is outside the workspace" in out[1]["content"] and "is outside the workspace" in out[6]["content"]
    assert out[2]["content"] == "no matches for 'SECRET-MARKER'"
    assert out[3]["content"] == "no matches for 'token'"
    assert "hard links" in out[4]["content"] and "hard links" in out[5]["content"]
    assert canary.read_text() == f"token = {MARKER}\n"
    assert os.stat(canary).st_nlink == 2  # the workspace name still points at it: nothing was replaced
    assert MARKER not in proc.stdout + proc.stderr
    assert MARKER not in json.dumps(server.requests)
    sessions = list((loop_home / "sessions").rglob("*.jsonl"))
    assert sessions and "notes.txt has 2 hard links" in sessions[0].read_text()  # the results are in it
    for p in sessions:
        assert MARKER not in p.read_text(), p


def test_the_file_tools_never_complete_a_bare_repository_shape(run_loop, server, tmp_path):
    """No repository: HEAD, objects/, refs/ and a config at the root would make the user's next `git status`
    read that config (its core.fsmonitor runs). The shell's tripwire never sees what the file tools write."""
    ws = tmp_path / "plain"
    ws.mkdir()
    marker = tmp_path / "ran"
    evil = f'[core]\n\tbare = true\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = touch {marker}\n'
    server.add(
        tools(("write_file", {"path": "config", "content": evil}),
              ("write_file", {"path": "objects/info/keep", "content": ""}),
              ("write_file", {"path": "refs/heads/keep", "content": ""}),
              ("write_file", {"path": "HEAD", "content": "ref: refs/heads/main\n"}),
              ("write_file", {"path": "deep/objects/x", "content": ""}),
              ("write_file", {"path": "deep/HEAD", "content": "ref: refs/heads/main\n"}),
              ("write_file", {"path": "deep/refs/x", "content": ""})),
        text("done"),
    )
    proc = agent(run_loop, server, ws)
    assert proc.returncode == 0, proc.stderr
    errors = [r["is_error"] for r in results(proc)]
    assert errors == [False, False, False, True, False, False, True]
    assert "shape of a git directory" in results(proc)[3]["content"]
    assert not (ws / "HEAD").exists() and not (ws / "deep" / "refs").exists()
    assert git(ws, "rev-parse", "--git-dir").returncode != 0  # git finds no repository there
    (ws / "HEAD").write_text("ref: refs/heads/main\n")  # the one file refused: with it, git would
    assert git(ws, "rev-parse", "--git-dir").stdout.strip() == "."
