"""The tripwire through the real entry point: `loop agent --json --approval all`, the sandbox on where
bwrap runs, the fake server's scripted model planting git metadata with a shell call; then the
user's own git (and loop's own session_start hook) in the workspace. The planted program touches a
marker in a host temporary directory the sandbox hides, so only a process outside it can make it.
Each attack is first shown to work: the same script, run plainly in a copy, and git pointed at it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import text, tools

# A nested repository, added to the workspace's index (so git recurses into it), then given a
# config that runs a program on the next `git status` (written plainly: the policy asks before `git config`).
NESTED = ("git init -q sub && git -C sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m x"
          " && git add sub && printf '[core]\\n\\tfsmonitor = \"touch {marker}; false\"\\n' >> sub/.git/config")
# The workspace root shaped as a bare repository with a signed commit and a config that runs a
# program on `git log` (log.showSignature calls gpg.program) and `git status`.
BARE_ROOT = r"""mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD
t=$(git --git-dir=. mktree </dev/null)
c=$(printf 'tree %s\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n x\n -----END PGP SIGNATURE-----\n\nsigned\n' "$t" | git --git-dir=. hash-object -t commit -w --stdin)
echo "$c" > refs/heads/main
printf '#!/bin/sh\ntouch {marker}\n' > g.sh && chmod +x g.sh
printf '[core]\n\tfsmonitor = "touch {marker}; false"\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = %s/g.sh\n' "$PWD" > config
"""
BREAK_HEAD = "printf garbage > .git/HEAD\n"  # git then falls back to the root as a bare repository


def user_git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The user's own git, after the session: no system or global config of the test machine."""
    env = {**os.environ, "HOME": str(where.parent / "user-home"), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=where, env=env, capture_output=True, text=True, timeout=30)


def repository(where: Path) -> Path:
    where.mkdir()
    (where / "a.txt").write_text("hello\n")
    for args in (("init", "-q", "-b", "main"), ("add", "a.txt"),
                 ("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "first")):
        assert user_git(where, *args).returncode == 0
    return where


def attack_works(tmp_path: Path, script: str, marker: Path, *user_commands: tuple[str, ...], repo: bool = True):
    """The planted state, made plainly in a copy, runs the marker program from the user's git."""
    demo = repository(tmp_path / "demo") if repo else tmp_path / "demo"
    demo.mkdir(exist_ok=True)
    subprocess.run(["bash", "-c", script], cwd=demo, check=True, capture_output=True, timeout=30)
    for command in user_commands:
        user_git(demo, *command)
    assert marker.exists(), "the attack did not work without the tripwire"
    marker.unlink()


def plant(run_loop, server, ws: Path, script: str) -> str:
    """One run whose model plants `script` with a shell call; the call's result as the model read it."""
    server.add(tools(("shell", {"command": script})), text("done"))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), "do the task")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert "tripwire:" in result["content"]  # the model reads what was put back
    warned = [e for e in events if e["type"] == "notice" and e["kind"] == "warning" and "tripwire:" in e["text"]]
    assert len(warned) == 1 and "loop: tripwire:" in proc.stderr  # and the user is told
    return result["content"]


def test_a_nested_repository_cannot_run_a_program_from_the_users_git_status(run_loop, server, tmp_path):
    marker = tmp_path / "marker"
    script = NESTED.format(marker=marker)
    attack_works(tmp_path, script, marker, ("status",))
    ws = repository(tmp_path / "ws")
    said = plant(run_loop, server, ws, script)
    assert "core.fsmonitor (sub/.git/config) removed" in said
    for command in (("status",), ("log", "--oneline"), ("diff", "--cached")):
        assert user_git(ws, *command).returncode == 0
    assert not marker.exists()
    assert "160000" in user_git(ws, "ls-files", "-s", "sub").stdout  # the fixture is still a submodule
    assert user_git(ws / "sub", "log", "--oneline").stdout.endswith(" x\n")  # and still works


def test_the_workspace_turned_into_a_bare_repository_runs_nothing_nor_does_the_session_start_hook(
        run_loop, server, tmp_path, loop_home):
    marker = tmp_path / "marker"
    script = BREAK_HEAD + BARE_ROOT.format(marker=marker)
    attack_works(tmp_path, script, marker, ("log", "--oneline", "-5"))
    ws = repository(tmp_path / "ws")
    loop_home.mkdir(parents=True, exist_ok=True)  # the README's example hook, in the user's file
    (loop_home / "config.json").write_text(json.dumps({"hooks": {"session_start": [{"command": "git log --oneline -5"}]}}))
    said = plant(run_loop, server, ws, script)
    assert "a broken HEAD (.git/HEAD) restored" in said and "bare repository at the workspace root" in said
    for command in (("status",), ("log", "--oneline", "-5")):
        ran = user_git(ws, *command)
        assert ran.returncode == 0, ran.stderr
    assert user_git(ws, "rev-parse", "--git-dir").stdout == ".git\n"
    assert user_git(ws, "log", "--format=%s").stdout == "first\n"  # the user's history, not the planted one
    server.add(text("done"))  # the next start runs the hook: `git log` in the workspace
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), "another task")
    assert proc.returncode == 0, proc.stderr
    hooks = [json.loads(line) for line in proc.stdout.splitlines() if '"type": "hook"' in line]
    assert [h["verdict"] for h in hooks] == ["ok"]
    assert not marker.exists()


def test_a_workspace_without_a_repository_given_a_bare_shape_runs_nothing(run_loop, server, tmp_path):
    marker = tmp_path / "marker"
    script = BARE_ROOT.format(marker=marker)
    attack_works(tmp_path, script, marker, ("log", "--oneline"), repo=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    plant(run_loop, server, ws, script)
    for command in (("status",), ("log", "--oneline")):
        user_git(ws, *command)  # fails: there is no repository, as before the session
    assert not marker.exists()
    assert not (ws / "HEAD").exists() and (ws / "HEAD.loop-tripwire").exists()


def test_a_worktree_workspace_cannot_have_its_commondir_redirected(run_loop, server, tmp_path):
    """The workspace is a linked worktree; the command points its git dir's `commondir` at a planted copy
    of the repository whose config runs a program (the walls may refuse the write; else the tripwire).
    Written from Python: the policy asks before a shell redirection outside the workspace."""
    marker = tmp_path / "marker"
    script = ("mkdir planted && cp -r ../main/.git/objects ../main/.git/refs planted/"
              f" && printf '[core]\\n\\tfsmonitor = \"touch {marker}; false\"\\n' > planted/config"
              " && python3 -c 'import os, subprocess; d = subprocess.check_output([\"git\", \"rev-parse\", \"--git-dir\"],"
              " text=True).strip(); open(os.path.join(d, \"commondir\"), \"w\").write(os.getcwd() + \"/planted\\n\")'")
    for name in ("demo-main", "main"):
        repository(tmp_path / name)
    user_git(tmp_path / "demo-main", "worktree", "add", "-q", "../demo")
    subprocess.run(["bash", "-c", script.replace("../main/", "../demo-main/")], cwd=tmp_path / "demo", check=True,
                   capture_output=True, timeout=30)
    user_git(tmp_path / "demo", "status")
    assert marker.exists(), "the attack did not work without the tripwire"
    marker.unlink()
    assert user_git(tmp_path / "main", "worktree", "add", "-q", "../ws").returncode == 0
    ws = tmp_path / "ws"
    server.add(tools(("shell", {"command": script})), text("done"))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), "do the task")
    assert proc.returncode == 0, proc.stdout
    [result] = [json.loads(line) for line in proc.stdout.splitlines() if '"type": "tool_result"' in line]
    assert "tripwire:" in result["content"] or not result["content"].startswith("exit code 0")
    for where in (ws, tmp_path / "main"):
        assert user_git(where, "status").returncode == 0
    assert not marker.exists()
    assert (tmp_path / "main/.git/worktrees/ws/commondir").read_text() == "../..\n"
