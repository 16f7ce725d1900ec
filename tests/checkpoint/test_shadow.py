"""The shadow repository in-process: what a snapshot holds, what a restore touches, rewind and diff."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loopagent.checkpoint import NothingToDo, Recorder, Timeline
from loopagent.events import MessageAdded, Notice, ToolStarted
from loopagent.messages import ToolCall, UserMessage


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("v1\n")
    (root / "odd name * [x].txt").write_text("odd\n")
    (root / "ünï.txt").write_text("u\n")
    return root


def timeline(tmp_path: Path, ws: Path, max_bytes: int = 1000) -> Timeline:
    return Timeline.open(tmp_path / "home", ws, max_bytes)


def tracked(t: Timeline) -> set[str]:
    out = t.repo.git("ls-tree", "-r", "-z", "--name-only", t.list()[0].commit, strip=False)
    return set(out.split("\0")) - {""}


def test_unchanged_tree_takes_no_new_checkpoint(tmp_path, ws):
    t = timeline(tmp_path, ws)
    assert t.checkpoint("before a", "s", 2).commit is not None
    assert t.checkpoint("before b", "s", 4).commit is None
    (ws / "src" / "app.py").write_text("v2\n")
    assert t.checkpoint("before c", "s", 6).commit is not None
    assert [c.message for c in t.list()] == ["before c", "before a"]


def test_ignored_big_and_nested_repo_files_are_left_out_and_left_alone(tmp_path, ws):
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "run.log").write_text("log\n")
    (ws / "big.bin").write_bytes(b"x" * 5000)
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=nested, check=True, timeout=30)
    (nested / "lib.py").write_text("lib\n")
    nested_git = sorted(p.relative_to(nested) for p in (nested / ".git").rglob("*"))
    t = timeline(tmp_path, ws)
    warnings: list[str] = []
    rec = Recorder(t, "s", 0, warn=warnings.append)
    rec.before_change(ToolCall("c", "shell", "{}"), "")
    assert tracked(t) == {".gitignore", "odd name * [x].txt", "ünï.txt", "src/app.py"}
    assert len(warnings) == 1 and "big.bin" in warnings[0] and "vendor/lib/" in warnings[0]

    for p in ["run.log", "big.bin", "vendor/lib/lib.py"]:
        (ws / p).write_text("changed\n")
    (ws / "src" / "app.py").write_text("v2\n")
    rec.before_change(ToolCall("d", "shell", "{}"), "")
    t.undo()
    assert (ws / "src" / "app.py").read_text() == "v1\n"
    assert all((ws / p).read_text() == "changed\n" for p in ["run.log", "big.bin", "vendor/lib/lib.py"])
    assert sorted(p.relative_to(nested) for p in (nested / ".git").rglob("*")) == nested_git
    assert len(warnings) == 1  # each left-out path is reported once


def test_odd_file_names_survive_undo(tmp_path, ws):
    t = timeline(tmp_path, ws)
    t.checkpoint("before edit_file", "s", 2)
    (ws / "odd name * [x].txt").unlink()
    (ws / "ünï.txt").write_text("changed\n")
    (ws / "new dir").mkdir()
    (ws / "new dir" / "*").write_text("star\n")
    t.undo()
    assert (ws / "odd name * [x].txt").read_text() == "odd\n" and (ws / "ünï.txt").read_text() == "u\n"
    assert not (ws / "new dir").exists()


def test_recorder_snapshots_before_changing_calls_only(tmp_path, ws):
    t = timeline(tmp_path, ws)
    notices: list = []
    rec = Recorder(t, "sess", 0, emit=notices.append)
    call = ToolCall("c1", "edit_file", '{"path": "src/app.py"}')
    rec(MessageAdded(UserMessage("task"), 1))
    rec(ToolStarted(ToolCall("r", "read_file", "{}"), read_only=True))  # a listener: events never snapshot
    assert t.list() == []
    rec.before_change(call, "src/app.py")  # the loop's explicit step before a mutating call
    [cp] = t.list()
    assert (cp.message, cp.session, cp.index, cp.kind) == ("before edit_file src/app.py", "sess", 2, "tool")
    assert notices == [Notice("checkpoint", f"{cp.short} before edit_file src/app.py")]


def test_rewind_restores_the_files_of_a_message_and_redo_reverses_it(tmp_path, ws):
    t = timeline(tmp_path, ws)
    app = ws / "src" / "app.py"
    t.checkpoint("before edit 1", "s", 3)  # files as they were when the session had 3 messages
    app.write_text("v2\n")
    t.checkpoint("before edit 2", "s", 5)
    t.checkpoint("before read-write with no change", "s", 7)  # unchanged: journaled, no commit
    app.write_text("v3\n")
    assert t.rewind("s", 9) is None  # no change was made after message 9
    assert t.rewind("s", 6).message == "before edit 2" and app.read_text() == "v2\n"
    t.redo()
    assert app.read_text() == "v3\n"
    t.rewind("s", 1)
    assert app.read_text() == "v1\n"
    assert "-v1\n+v3" in _diff_after_redo(t)


def _diff_after_redo(t: Timeline) -> str:
    t.redo()
    return t.diff_since("s")


def test_diff_since_is_empty_for_a_session_without_changes(tmp_path, ws):
    t = timeline(tmp_path, ws)
    assert t.diff_since("none") == ""
    with pytest.raises(NothingToDo):
        t.undo()
    with pytest.raises(NothingToDo):
        t.redo()


def test_undo_never_deletes_through_a_symlinked_directory(tmp_path, ws):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious\n")
    t = timeline(tmp_path, ws)
    t.checkpoint("before shell", "s", 2)
    (ws / "gen").mkdir()
    (ws / "gen" / "keep.txt").write_text("generated\n")
    t.checkpoint("before shell 2", "s", 4)
    # The directory becomes a link to somewhere else before the undo.
    (ws / "gen" / "keep.txt").unlink()
    (ws / "gen").rmdir()
    (ws / "gen").symlink_to(outside)
    t.undo()
    assert (outside / "keep.txt").read_text() == "precious\n"


def test_first_snapshot_of_a_big_tree_equals_what_git_add_stores(tmp_path, ws):
    from loopagent.checkpoint.shadow import BULK

    for i in range(BULK + 10):  # enough files for the fast-import path
        (ws / "src" / f"m{i}.py").write_text(f"x = {i}\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "link").symlink_to("src/app.py")
    t = timeline(tmp_path, ws, max_bytes=10_000)
    snap = t.checkpoint("before shell", "s", 2)
    env = {"GIT_DIR": str(tmp_path / "plain.git"), "GIT_WORK_TREE": str(ws), "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_INDEX_FILE": str(tmp_path / "plain.index"), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q"], env=env, cwd=ws, check=True, timeout=30)
    subprocess.run(["git", "add", "-A"], env=env, cwd=ws, check=True, timeout=60)
    plain = subprocess.run(["git", "write-tree"], env=env, cwd=ws, check=True, timeout=30, capture_output=True,
                           text=True).stdout.strip()
    assert snap.staged.tree == plain
    assert t.checkpoint("unchanged", "s", 4).commit is None  # the index has stat data: nothing to rehash


def test_loop_home_inside_the_workspace_is_never_snapshotted(tmp_path, ws):
    t = Timeline.open(ws / ".loop-home", ws)
    t.checkpoint("before shell", "s", 2)
    (ws / "src" / "app.py").write_text("v2\n")
    t.checkpoint("before shell", "s", 4)
    assert not any(p.startswith(".loop-home") for p in tracked(t))
    t.undo()
    assert (ws / ".loop-home").is_dir() and (ws / "src" / "app.py").read_text() == "v1\n"
