"""loop's own git (the checkpoint shadow repository) runs no program that config or the workspace names.

Real git on a real shadow repository. The shadow's config lives in $LOOP_HOME, hidden from the sandbox; here it
is written as it could be where $LOOP_HOME is writable (--sandbox off, a sandbox_writable entry), and the
attack is first shown to work on a plain git run on the same repository.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from loopagent.checkpoint import shadow
from loopagent.checkpoint.shadow import ShadowRepo


def planted(where: Path, name: str, marker: Path) -> Path:
    script = where / name
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    script.chmod(0o755)
    return script


def test_program_running_config_in_the_shadow_repository_runs_nothing(tmp_path):
    ws, hooks, marks = tmp_path / "ws", tmp_path / "hooks", tmp_path / "marks"
    for d in (ws, hooks, marks):
        d.mkdir()
    (ws / "a.txt").write_text("one\n")
    repo = ShadowRepo(tmp_path / "home" / "shadow", ws)
    repo.init()
    first = repo.commit(repo.stage().tree, "one", None)
    for hook in ("reference-transaction", "post-checkout", "post-index-change"):
        planted(hooks, hook, marks / hook)
    fsmonitor = planted(tmp_path, "fsmonitor", marks / "fsmonitor")
    with (repo.git_dir / "config").open("a") as f:
        f.write(f"[core]\n\tfsmonitor = {fsmonitor}\n\thooksPath = {hooks}\n")
    plain = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git = ["git", f"--git-dir={repo.git_dir}", f"--work-tree={ws}"]
    subprocess.run([*git, "update-ref", "refs/heads/probe", first], env=plain, check=True, timeout=30)
    subprocess.run([*git, "status", "--short"], env=plain, capture_output=True, check=True, timeout=30)
    assert {p.name for p in marks.iterdir()} >= {"reference-transaction", "fsmonitor"}  # the attack works
    for p in marks.iterdir():
        p.unlink()
    (ws / "a.txt").write_text("two\n")
    second = repo.commit(repo.stage().tree, "two", first)  # update-index, write-tree, update-ref
    repo.git("log", "--format=%H", shadow.REF)
    repo.git("diff", "--no-color", "--no-ext-diff", first, repo.tree_of(second))
    repo.git("checkout", first, "--", "a.txt")
    repo.git("update-index", "-q", "--refresh")
    assert (ws / "a.txt").read_text() == "one\n"
    assert sorted(p.name for p in marks.iterdir()) == []


def test_a_git_the_model_wrote_is_not_run_through_a_relative_path_entry(tmp_path, monkeypatch):
    ws, marker = tmp_path / "ws", tmp_path / "planted-git-ran"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    planted(ws, "git", marker)
    monkeypatch.setenv("PATH", ":." + os.pathsep + os.environ["PATH"])  # empty and `.`: the working directory
    subprocess.run(["git", "--version"], cwd=ws, capture_output=True, timeout=30)
    assert marker.exists()  # a plain git in the workspace is the model's
    marker.unlink()
    monkeypatch.setattr(shadow, "_git", [])
    repo = ShadowRepo(tmp_path / "home" / "shadow", ws)
    monkeypatch.chdir(ws)
    repo.init()
    repo.commit(repo.stage().tree, "one", None)
    assert not marker.exists()
    assert os.path.isabs(shadow.git_program())


@pytest.mark.parametrize("key", [key for key, _ in shadow.PINNED])
def test_every_pinned_key_reaches_git(tmp_path, key):
    repo = ShadowRepo(tmp_path / "shadow", tmp_path)
    repo.init()
    with (repo.git_dir / "config").open("a") as f:
        section, name = key.split(".")
        f.write(f"[{section}]\n\t{name} = planted\n")
    assert repo.git("config", "--get", key) == dict(shadow.PINNED)[key]
