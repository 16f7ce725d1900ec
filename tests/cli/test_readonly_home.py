"""A read-only $LOOP_HOME is said up front, in one line naming the path, before anything is asked or changed.

The file system is really read-only: the child runs in its own user and mount namespace
(`unshare -rm`) with $LOOP_HOME bind-mounted read-only; skipped where namespaces are not allowed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import text, tools

MOUNT_RO = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'


def namespaces_work(tmp: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", MOUNT_RO, "sh", str(tmp), "true"],
                           capture_output=True, timeout=20)
    return probe.returncode == 0


def read_only(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`loop ARGS` with `home` (its LOOP_HOME) mounted read-only."""
    cmd = ["unshare", "-rm", "sh", "-c", MOUNT_RO, "sh", str(home), sys.executable, "-m", "loopagent", *args]
    return subprocess.run(cmd, env=clean_env(home), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def ro_ok(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.mkdir()
    if not namespaces_work(probe):
        pytest.skip("user and mount namespaces are not available here")


def test_a_run_says_read_only_before_the_first_request(ro_ok, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    loop_home.mkdir()
    server.add(text("never asked"))
    proc = read_only(loop_home, "agent", "-C", str(ws), "--base-url", server.url, "--json", "hello")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loop: read-only file system: "), proc.stderr
    assert str(loop_home) in lines[0]
    assert server.requests == []
    assert not list(loop_home.iterdir())


def test_undo_says_read_only_and_changes_nothing(ro_ok, run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("before\n")
    server.add(tools(("write_file", {"path": "a.txt", "content": "after\n"})), text("done"))
    done = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--approval", "all", *where_shells_run(),
                    "change a.txt")
    assert done.returncode == 0, done.stderr
    proc = read_only(loop_home, "undo", "-C", str(ws))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loop: read-only file system: " + str(loop_home)), proc.stderr
    assert (ws / "a.txt").read_text() == "after\n"
    assert run_loop("undo", "-C", str(ws)).returncode == 0  # writable again: the undo works
    assert (ws / "a.txt").read_text() == "before\n"
