"""`loop undo`, `loop checkpoints` and `loop sessions` run from a subdirectory of a repository find the
workspace `loop agent` used there (the repository root), so undo finds the run's checkpoints."""

from __future__ import annotations

import json

from tests.cli.test_agent_inputs import git_repo
from tests.fakeserver import text, tools


def test_undo_from_the_subdirectory_a_run_started_in_restores_its_change(run_loop, server, tmp_path):
    repo = git_repo(tmp_path / "repo")
    sub = repo / "sub"
    before = (repo / "top.txt").read_text()
    server.add(tools(("write_file", {"path": "top.txt", "content": "changed\n"})), text("done"))
    run = run_loop("agent", "--json", "--approval", "all", "--base-url", server.url, "change it", cwd=sub)
    assert run.returncode == 0, run.stderr
    assert (repo / "top.txt").read_text() == "changed\n"

    listed = run_loop("checkpoints", cwd=sub)
    assert listed.returncode == 0 and "write_file top.txt" in listed.stdout, listed.stdout + listed.stderr
    sessions = run_loop("sessions", cwd=sub)
    session_id = next(json.loads(line)["id"] for line in run.stdout.splitlines()
                      if json.loads(line)["type"] == "session")
    assert session_id[:8] in sessions.stdout
    undone = run_loop("undo", cwd=sub)
    assert undone.returncode == 0, undone.stderr
    assert f"loop: workspace: {repo.resolve()}" in undone.stderr
    assert (repo / "top.txt").read_text() == before


def test_dash_c_names_the_subdirectory_which_has_no_checkpoints(run_loop, tmp_path):
    repo = git_repo(tmp_path / "repo")
    proc = run_loop("checkpoints", "-C", ".", cwd=repo / "sub")
    assert proc.returncode == 0 and "no checkpoints for this workspace" in proc.stdout
    assert "workspace:" not in proc.stderr
