"""Checkpoints end to end: a real run takes them, `loop undo`/`redo` move the files, the user's repo is untouched."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from loopagent.checkpoint import Timeline
from tests.conftest import where_shells_run
from tests.fakeserver import text, tools

FIX_OLD = "        path = PurePosixPath(name)\n"
FIX_NEW = '        path = PurePosixPath(name.replace("\\\\", "/"))\n'
SHELL = "rm notes.txt && echo new > created.txt && mkdir -p build && echo o > build/out.o && echo more >> debug.log"


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True, timeout=30).stdout


def user_repo(ws: Path) -> None:
    """The sample as the user's own repository: history, a stash, a staged file, untracked and ignored files."""
    (ws / ".gitignore").write_text("debug.log\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "-c", "user.name=u", "-c", "user.email=u@x", "add", "-A")
    git(ws, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "initial")
    (ws / "README.md").write_text("stashed change\n")
    git(ws, "-c", "user.name=u", "-c", "user.email=u@x", "stash", "-q")
    (ws / "staged.txt").write_text("staged\n")
    git(ws, "add", "staged.txt")
    (ws / "notes.txt").write_text("my notes\n")
    (ws / "debug.log").write_text("ignored\n")


def dot_git_digest(ws: Path) -> str:
    h = hashlib.sha256()
    for p in sorted((ws / ".git").rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(ws)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def user_view(ws: Path) -> tuple[str, str, str]:
    return (git(ws, "status", "--porcelain", "--ignored"), git(ws, "log", "--all", "--format=%H %s"),
            git(ws, "stash", "list"))


def test_undo_redo_after_edit_and_shell_leave_the_users_repo_alone(run_loop, server, sample, loop_home):
    user_repo(sample)
    view_before, digest_before = user_view(sample), dot_git_digest(sample)
    original = (sample / "path_rules.py").read_text()
    server.add(
        tools(("read_file", {"path": "path_rules.py"}),
              ("edit_file", {"path": "path_rules.py", "old_string": FIX_OLD, "new_string": FIX_NEW})),
        tools(("shell", {"command": SHELL})),
        text("done"),
    )
    proc = run_loop("agent", "-C", str(sample), "--base-url", server.url, "--json", "--approval", "all", *where_shells_run(), "fix it")
    assert proc.returncode == 0, proc.stderr
    session_id = json.loads(proc.stdout.splitlines()[0])["id"]
    fixed = (sample / "path_rules.py").read_text()
    assert fixed != original, proc.stdout
    assert (sample / "created.txt").exists() and not (sample / "notes.txt").exists()

    listed = run_loop("checkpoints", "-C", str(sample)).stdout.splitlines()
    assert len(listed) == 2
    assert "msg 6" in listed[0] and "before shell rm notes.txt" in listed[0]
    assert "msg 4" in listed[1] and "before edit_file path_rules.py" in listed[1]
    marks = Timeline.open(loop_home, sample).list()
    assert {c.session for c in marks} == {session_id} and [c.index for c in marks] == [6, 4]

    first = run_loop("undo", "-C", str(sample))  # back to before the shell call
    assert first.returncode == 0 and "before shell" in first.stdout
    assert (sample / "notes.txt").read_text() == "my notes\n"
    assert not (sample / "created.txt").exists() and not (sample / "build").exists()
    assert (sample / "path_rules.py").read_text() == fixed
    assert (sample / "debug.log").read_text() == "ignored\nmore\n"  # ignored: never snapshotted nor touched

    second = run_loop("undo", "-C", str(sample))  # back to before the edit
    assert second.returncode == 0 and "before edit_file" in second.stdout
    assert (sample / "path_rules.py").read_text() == original
    assert dot_git_digest(sample) == digest_before  # nothing in .git was written
    assert user_view(sample) == view_before
    assert run_loop("undo", "-C", str(sample)).returncode == 1  # nothing older

    assert run_loop("redo", "-C", str(sample)).returncode == 0  # reverses the second undo
    assert (sample / "path_rules.py").read_text() == fixed and (sample / "notes.txt").exists()
    assert not (sample / "created.txt").exists()
    assert run_loop("redo", "-C", str(sample)).returncode == 0  # and the first
    assert (sample / "build" / "out.o").exists() and not (sample / "notes.txt").exists()
    nothing = run_loop("redo", "-C", str(sample))
    assert nothing.returncode == 1 and "nothing to redo" in nothing.stderr


def test_no_checkpoints_flag_takes_none(run_loop, server, sample, loop_home):
    server.add(tools(("write_file", {"path": "new.txt", "content": "x\n"})), text("ok"))
    proc = run_loop("agent", "-C", str(sample), "--base-url", server.url, "--json", "--approval", "all", *where_shells_run(),
                    "--no-checkpoints", "write")
    assert proc.returncode == 0 and (sample / "new.txt").exists()
    assert not (loop_home / "checkpoints").exists()
    undo = run_loop("undo", "-C", str(sample))
    assert undo.returncode == 1 and "no checkpoints" in undo.stderr


def test_a_checkpoint_directory_that_cannot_be_made_is_refused_before_the_run(run_loop, server, sample, loop_home):
    # Said up front, in one line with the path (tests/cli/test_readonly_home.py: a read-only LOOP_HOME);
    # a snapshot that fails during a run is a warning for that one (tests/checkpoint/test_concurrency.py).
    loop_home.mkdir(parents=True)
    (loop_home / "checkpoints").write_text("not a directory")
    server.add(tools(("write_file", {"path": "a.txt", "content": "a"})), text("ok"))
    proc = run_loop("agent", "-C", str(sample), "--base-url", server.url, "--json", "--approval", "all", *where_shells_run(), "write")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(loop_home / "checkpoints") in lines[0] and "--no-checkpoints" in lines[0]
    assert server.requests == [] and not (sample / "a.txt").exists()
