"""`loop undo` that survives a kill mid-restore, and restores that touch nothing they should not:
a user's ignored files, file permissions, line endings, pre-existing empty directories.

The kill is a real SIGKILL of a real `loop undo`, placed half-way through its restore with the
test-only fault point LOOP_TEST_RESTORE_GATE (loopagent/checkpoint/restore.py: the process writes
the gate file and waits there to be killed; inert when the variable is unset).
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, wait_for, where_shells_run
from tests.fakeserver import text, tools


def agent(run_loop, server, ws: Path, task: str) -> None:
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--approval", "all", *where_shells_run(), task)
    assert proc.returncode == 0, proc.stderr


def write(path: str, content: str):
    return tools(("write_file", {"path": path, "content": content}))


def loop(run_loop, *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_loop(*args)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_an_undo_killed_mid_restore_is_finished_not_repeated(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("v1\n")
    server.add(write("a.txt", "v2\n"), write("a.txt", "v3\n"), text("done"))
    agent(run_loop, server, ws, "edit a twice")
    gate = tmp_path / "gate"
    cmd = [sys.executable, "-m", "loopagent", "undo", "-C", str(ws)]
    proc = subprocess.Popen(cmd, env={**clean_env(loop_home), "LOOP_TEST_RESTORE_GATE": str(gate)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(gate.exists)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert (ws / "a.txt").read_text() == "v3\n"  # killed before the files were written
    again = loop(run_loop, "undo", "-C", str(ws))
    assert again.stdout.startswith("finished the interrupted undo: ")
    assert (ws / "a.txt").read_text() == "v2\n"  # the undo that was asked for, not one further back
    loop(run_loop, "undo", "-C", str(ws))
    assert (ws / "a.txt").read_text() == "v1\n"
    loop(run_loop, "redo", "-C", str(ws))
    loop(run_loop, "redo", "-C", str(ws))
    assert (ws / "a.txt").read_text() == "v3\n"
    assert "nothing to redo" in run_loop("redo", "-C", str(ws)).stderr


def test_a_redo_killed_mid_restore_is_finished_once(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("v1\n")
    server.add(write("a.txt", "v2\n"), text("done"))
    agent(run_loop, server, ws, "edit a")
    loop(run_loop, "undo", "-C", str(ws))
    gate = tmp_path / "gate"
    proc = subprocess.Popen([sys.executable, "-m", "loopagent", "redo", "-C", str(ws)],
                            env={**clean_env(loop_home), "LOOP_TEST_RESTORE_GATE": str(gate)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(gate.exists)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    finally:
        proc.kill()
    again = loop(run_loop, "redo", "-C", str(ws))
    assert again.stdout.startswith("finished the interrupted redo: ")
    assert (ws / "a.txt").read_text() == "v2\n"
    assert "nothing to redo" in run_loop("redo", "-C", str(ws)).stderr


def test_undo_keeps_a_users_ignored_file_after_the_agent_edited_gitignore(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text("*.env\n")
    (ws / "secret.env").write_text("KEY=1\n")  # the user's, ignored: no checkpoint ever held it
    (ws / "a.txt").write_text("a\n")
    server.add(write(".gitignore", "# nothing ignored\n"), write("a.txt", "changed\n"), text("done"))
    agent(run_loop, server, ws, "edit gitignore then a")
    loop(run_loop, "undo", "-C", str(ws))
    loop(run_loop, "undo", "-C", str(ws))
    assert (ws / ".gitignore").read_text() == "*.env\n" and (ws / "a.txt").read_text() == "a\n"
    assert (ws / "secret.env").read_text() == "KEY=1\n"
    loop(run_loop, "redo", "-C", str(ws))
    loop(run_loop, "redo", "-C", str(ws))
    assert (ws / "a.txt").read_text() == "changed\n" and (ws / "secret.env").read_text() == "KEY=1\n"


def test_undo_keeps_modes_line_endings_and_empty_directories(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitattributes").write_text("* text=auto\n")
    (ws / "secret.txt").write_text("a\n")
    os.chmod(ws / "secret.txt", 0o600)
    (ws / "tool.sh").write_text("echo hi\n")
    os.chmod(ws / "tool.sh", 0o750)
    (ws / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (ws / "out").mkdir()  # empty, before the agent writes into it
    change = "printf 'b\\n' > secret.txt && printf 'x\\n' > tool.sh && printf 'lf\\n' > crlf.txt && printf 'n\\n' > out/new.txt"
    server.add(tools(("shell", {"command": change})), text("done"))
    agent(run_loop, server, ws, "change things")
    assert (ws / "out" / "new.txt").exists() and (ws / "secret.txt").read_text() == "b\n"
    loop(run_loop, "undo", "-C", str(ws))
    assert (ws / "secret.txt").read_text() == "a\n"
    assert stat.S_IMODE((ws / "secret.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE((ws / "tool.sh").stat().st_mode) == 0o750
    assert (ws / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n"
    assert not (ws / "out" / "new.txt").exists() and (ws / "out").is_dir()
