"""A running session is locked; its file vanishing under a run stops the run.

Each test holds a real `loop` process at a known point with a gate: a fake-server reply that
waits on a threading.Event the test sets, so the second process acts while the first is mid-run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import clean_env
from tests.fakeserver import Reply, text, tools


class Gate:
    """A scripted reply that holds the request until `release`; `reached` is set when it arrives."""

    def __init__(self, reply: Reply):
        self.reply = reply
        self.reached = threading.Event()
        self.released = threading.Event()

    def __call__(self, body: dict) -> Reply:
        self.reached.set()
        self.released.wait(30)
        return self.reply

    def release(self) -> None:
        self.released.set()


def start(loop_home: Path, server, ws: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url, "--json",
           "--approval", "all", "--no-checkpoints", *extra]
    return subprocess.Popen(cmd, env=clean_env(loop_home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)


def agent(run_loop, server, ws: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    "--no-checkpoints", *extra)


def first_session(loop_home: Path) -> Path:
    found = list((loop_home / "sessions").glob("*/*.jsonl"))
    assert len(found) == 1, found
    return found[0]


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=30)
    finally:
        proc.kill()


def test_resuming_a_running_session_fails_at_once_and_writes_nothing(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    gate = Gate(text("first answer"))
    server.add(gate)
    first = start(loop_home, server, ws, "say something")
    try:
        assert gate.reached.wait(30), first.stderr
        path = first_session(loop_home)
        before = path.read_bytes()
        second = agent(run_loop, server, ws, "--resume", "last", "and more")
        assert second.returncode == 1, second.stderr
        assert f"session {path.stem} is in use by process {first.pid}" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1 and "repair" not in second.stderr
        assert path.read_bytes() == before  # nothing appended, nothing cut off
        assert len(server.requests) == 1  # the refused resume never asked the model
        listed = run_loop("sessions", "-C", str(ws))
        assert f"running (pid {first.pid})" in listed.stdout
    finally:
        gate.release()
    out, err = finish(first)
    assert first.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["status"] == "completed"
    server.add(text("second answer"))
    again = agent(run_loop, server, ws, "--resume", "last", "and more")
    assert again.returncode == 0, again.stderr
    assert not list(path.parent.glob("*.lock"))  # the lock goes with the process that held it


def test_two_concurrent_resumes_one_wins(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    server.add(text("first answer"))
    assert agent(run_loop, server, ws, "start").returncode == 0
    path = first_session(loop_home)
    gate = Gate(text("resumed answer"))
    server.add(gate)
    winner = start(loop_home, server, ws, "--resume", "last", "go on")
    try:
        assert gate.reached.wait(30)
        loser = agent(run_loop, server, ws, "--resume", path.stem, "me too")
        assert loser.returncode == 1
        assert f"is in use by process {winner.pid}" in loser.stderr and "repair" not in loser.stderr
    finally:
        gate.release()
    finish(winner)
    assert winner.returncode == 0
    kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert kinds.count("end") == 2 and "repair" not in kinds  # one process appended, once
    messages = [json.loads(line) for line in path.read_text().splitlines()]
    assert [m["content"] for m in messages if m.get("role") == "user"] == ["start", "go on"]


def test_a_lock_left_by_a_killed_process_is_taken_over(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    gate = Gate(text("never delivered"))
    server.add(gate)
    first = start(loop_home, server, ws, "say something")
    try:
        assert gate.reached.wait(30)
        path = first_session(loop_home)
        assert path.with_suffix(".lock").read_text().strip() == str(first.pid)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=10)
    finally:
        gate.release()
        first.kill()
    assert path.with_suffix(".lock").exists()  # left behind by the kill, pid and all
    server.add(text("resumed"))
    again = agent(run_loop, server, ws, "--resume", "last")
    assert again.returncode == 0, again.stderr
    assert "in use" not in again.stderr


def vanish(how: str):
    def act(path: Path) -> None:
        if how == "deleted":
            path.unlink()
        elif how == "truncated":
            os.truncate(path, 0)
        else:
            replacement = path.with_name("other")
            replacement.write_text(path.read_text())
            os.replace(replacement, path)
    return act


def lost_session(run_loop, server, tmp_path, loop_home, how: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    gate = Gate(tools(("read_file", {"path": "a.txt"})))
    server.add(gate, text("never asked"))
    proc = start(loop_home, server, ws, "read a.txt")
    try:
        assert gate.reached.wait(30)
        vanish(how)(first_session(loop_home))
    finally:
        gate.release()
    out, err = finish(proc)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if f"was {how}" in line]
    assert len(said) == 1 and said[0].startswith("loop: "), err
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and result["status"] == "error" and f"was {how}" in result["message"]
    assert len(server.requests) == 1  # stopped instead of going on unrecorded


def test_a_session_file_deleted_mid_run_stops_it(run_loop, server, tmp_path, loop_home):
    lost_session(run_loop, server, tmp_path, loop_home, "deleted")


def test_a_session_file_truncated_mid_run_stops_it(run_loop, server, tmp_path, loop_home):
    lost_session(run_loop, server, tmp_path, loop_home, "truncated")


def test_a_session_file_replaced_mid_run_stops_it(run_loop, server, tmp_path, loop_home):
    lost_session(run_loop, server, tmp_path, loop_home, "replaced")
