"""Checkpoints under concurrency and after kills: runs wait for each other's snapshots, one failed
snapshot is a warning for that one, and what a kill leaves in the shadow repository is cleaned up.

"Another loop in the middle of a snapshot" is played by the test itself: it holds the repository's
flock and git's `loop-index.lock`, exactly what a running snapshot holds. The states a kill leaves
(a stale git lock, a half-made repository) are laid down as a kill leaves them.
"""

from __future__ import annotations

import fcntl
import os
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path

from loopagent.checkpoint import checkpoints_dir
from loopagent.checkpoint.lock import lock_file
from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import Reply, text, tools


class Gate:
    """A scripted reply that holds the request until `release`; `reached` is set when it arrives."""

    def __init__(self, reply: Reply):
        self.reply, self.reached, self.released = reply, threading.Event(), threading.Event()

    def __call__(self, body: dict) -> Reply:
        self.reached.set()
        self.released.wait(30)
        return self.reply


def argv(server, ws: Path, *task: str) -> list[str]:
    return [sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url,
            "--approval", "all", *where_shells_run(), *task]


def hold(git_dir: Path) -> int:
    """Take the repository's flock as a running snapshot does."""
    lock_file(git_dir).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file(git_dir), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def read_until(stream, needle: str, timeout: float = 30) -> str:
    """Read a child's pipe until a line holds `needle` (fails at `timeout`); returns what was read."""
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    seen, deadline = b"", time.monotonic() + timeout
    while needle.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0 and sel.select(left), f"never saw {needle!r} in {seen!r}"
        chunk = os.read(stream.fileno(), 4096)
        assert chunk, f"the stream ended before {needle!r}: {seen!r}"
        seen += chunk
    return seen.decode()


def checkpoint_subjects(run_loop, ws: Path) -> str:
    listed = run_loop("checkpoints", "-C", str(ws))
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


def test_a_second_run_waits_for_the_first_runs_snapshot(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    server.add(tools(("write_file", {"path": "a.txt", "content": "zero\n"})), text("done"))
    assert run_loop(*argv(server, ws, "first")[3:]).returncode == 0
    git_dir = checkpoints_dir(loop_home, ws)
    fd = hold(git_dir)
    (git_dir / "loop-index.lock").write_bytes(b"")  # git's own lock, as during the other snapshot
    server.add(tools(("write_file", {"path": "a.txt", "content": "two\n"})), text("done"))
    proc = subprocess.Popen(argv(server, ws, "second"), env=clean_env(loop_home), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said = read_until(proc.stderr, "waiting for another loop process")
        assert (ws / "a.txt").read_text() == "zero\n"  # the change waits for its checkpoint
        (git_dir / "loop-index.lock").unlink()  # the other snapshot ends
        os.close(fd)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "no checkpoint" not in said + err.decode()
    assert (ws / "a.txt").read_text() == "two\n"
    assert checkpoint_subjects(run_loop, ws).count("before write_file a.txt") == 2


def test_one_failed_snapshot_does_not_turn_checkpoints_off(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    git_dir = checkpoints_dir(loop_home, ws)
    fd = hold(git_dir)
    gate = Gate(tools(("write_file", {"path": "b.txt", "content": "b\n"})))
    server.add(tools(("write_file", {"path": "a.txt", "content": "a\n"})), gate, text("done"))
    proc = subprocess.Popen(argv(server, ws, "write two files"), env={**clean_env(loop_home),
                            "LOOP_CHECKPOINT_LOCK_WAIT": "0"}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert gate.reached.wait(30)  # the first write ran without its checkpoint (the lock was taken)
        os.close(fd)
        gate.released.set()
        out, err = proc.communicate(timeout=60)
    finally:
        gate.released.set()
        proc.kill()
    assert proc.returncode == 0, err
    warnings = [line for line in err.splitlines() if "no checkpoint" in line]
    assert len(warnings) == 1 and "before write_file a.txt" in warnings[0] and str(lock_file(git_dir)) in warnings[0]
    subjects = checkpoint_subjects(run_loop, ws)
    assert "before write_file b.txt" in subjects and "a.txt" not in subjects
    assert (ws / "a.txt").exists() and (ws / "b.txt").exists()


def test_a_stale_git_lock_left_by_a_kill_is_removed(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    server.add(tools(("write_file", {"path": "a.txt", "content": "two\n"})), text("done"))
    assert run_loop(*argv(server, ws, "first")[3:]).returncode == 0
    git_dir = checkpoints_dir(loop_home, ws)
    (git_dir / "loop-index.lock").write_bytes(b"")  # a kill during a snapshot leaves this behind
    server.add(tools(("write_file", {"path": "a.txt", "content": "three\n"})), text("done"))
    proc = run_loop(*argv(server, ws, "second")[3:])
    assert proc.returncode == 0 and "checkpoint" not in proc.stderr, proc.stderr
    assert checkpoint_subjects(run_loop, ws).count("before write_file a.txt") == 2
    (git_dir / "loop-index.lock").write_bytes(b"")
    undo = run_loop("undo", "-C", str(ws))
    assert undo.returncode == 0, undo.stderr
    assert (ws / "a.txt").read_text() == "two\n"
    assert not (git_dir / "loop-index.lock").exists()


def test_a_lock_that_cannot_be_removed_is_named(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    server.add(tools(("write_file", {"path": "a.txt", "content": "two\n"})), text("done"))
    assert run_loop(*argv(server, ws, "first")[3:]).returncode == 0
    stuck = checkpoints_dir(loop_home, ws) / "loop-index.lock"
    stuck.mkdir()  # not a file: unlink fails, so the message must say which file to look at
    (stuck / "x").write_text("")
    undo = run_loop("undo", "-C", str(ws))
    assert undo.returncode == 1
    assert str(stuck) in undo.stderr and len(undo.stderr.strip().splitlines()) == 1, undo.stderr
    assert (ws / "a.txt").read_text() == "two\n"


def test_a_half_made_shadow_repository_is_built_again(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    git_dir = checkpoints_dir(loop_home, ws)
    git_dir.mkdir(parents=True)
    (git_dir / "config").write_text("[core]\n")  # a kill inside `git init`: no HEAD, no objects
    half_built = git_dir.parent / f".{git_dir.name}.new-killed"
    half_built.mkdir()  # a kill while building the new one, before its rename
    server.add(tools(("write_file", {"path": "a.txt", "content": "two\n"})), text("done"))
    proc = run_loop(*argv(server, ws, "change a")[3:])
    assert proc.returncode == 0 and "checkpoint" not in proc.stderr, proc.stderr
    assert (git_dir / "HEAD").is_file() and not half_built.exists()
    undo = run_loop("undo", "-C", str(ws))
    assert undo.returncode == 0, undo.stderr
    assert (ws / "a.txt").read_text() == "one\n"
