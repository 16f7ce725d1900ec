"""An unsandboxed shell call's processes end with loop, also when loop is SIGKILLed (bwrap's
--die-with-parent does it for sandboxed calls; spawn.guard for the rest); a planted `bwrap` in the
workspace is never what loop runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, wait_for
from tests.fakeserver import FakeServer, tools


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_sigkilled_loop_takes_an_unsandboxed_calls_processes_with_it(tmp_path: Path, loop_home: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    command = "sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; sleep 300; echo never"
    with FakeServer([tools(("shell", {"command": command}))]) as srv:
        cmd = [sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", srv.url, "--json",
               "--approval", "all", "--sandbox", "off", "go"]
        proc = subprocess.Popen(cmd, env=clean_env(loop_home), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        pids: list[int] = []
        try:
            wait_for(lambda: all((ws / f).exists() and (ws / f).read_text().strip() for f in ("bg.pid", "sh.pid")))
            pids = [int((ws / f).read_text()) for f in ("bg.pid", "sh.pid")]
            assert not any(gone(pid) for pid in pids)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            wait_for(lambda: all(gone(pid) for pid in pids), timeout=10)
        finally:
            proc.kill()
            proc.wait(timeout=10)
            for pid in pids:
                if not gone(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_bwrap_in_the_workspace_is_not_the_one_probed(tmp_path: Path):
    marker = tmp_path / "ran"
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fake.chmod(0o755)
    code = "from loopagent.sandbox.probe import probe; print(probe('.:' + __import__('os').defpath).bwrap)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert not marker.exists() and done.stdout.strip() != "./bwrap"
