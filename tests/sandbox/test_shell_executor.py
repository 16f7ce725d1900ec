"""The shell tool with the bwrap executor: the same output, timeout and cancel behaviour, contained."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from loopagent.sandbox import PlainExecutor, open_sandbox, spec_from
from loopagent.sandbox.probe import probe
from loopagent.secrets import scrubbed_env
from loopagent.tools.base import ToolContext
from loopagent.tools.shell import Shell, ShellParams
from loopagent.tools.workspace import Workspace
from tests.sandbox.test_sandbox_e2e import live_commands

pytestmark = pytest.mark.skipif(not probe(os.environ.get("PATH")).works,
                                reason=f"no working bwrap here: {probe(os.environ.get('PATH')).problem}")


@pytest.fixture
def c(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox = open_sandbox(spec_from("workspace-write", ws, os.environ), os.environ)
    assert sandbox.state == "sandboxed" and sandbox.executor.describe() == "sandboxed: workspace writable, no network"
    return ToolContext(Workspace(ws), env=scrubbed_env(os.environ), executor=sandbox.executor)


def sh(c: ToolContext, command: str, timeout: float | None = None):
    return Shell().run(ShellParams(command=command, timeout=timeout), c)


def test_output_and_exit_code_as_without_the_sandbox(c):
    result = sh(c, "echo out; echo err >&2; pwd; exit 3")
    assert result.is_error and result.content == f"exit code 3\nout\nerr\n{c.workspace.root}\n"


def test_the_command_is_pid_1s_child_in_its_own_namespace(c):
    _, ppid, count = sh(c, "echo $PPID; ls /proc | grep -c '^[0-9]'").content.splitlines()
    assert ppid == "1" and int(count) <= 4  # bwrap's init, bash, ls, grep: nothing of the host


def test_timeout_kills_everything_in_the_namespace(c):
    result = sh(c, "setsid sleep 9873.25 & sleep 9873.5", timeout=0.5)
    assert result.content.startswith("timed out after 0.5 s")
    assert live_commands("sleep 9873.") == []


def test_cancel_kills_the_sandboxed_command(c, tmp_path):
    fifo = c.workspace.root / "started"
    os.mkfifo(fifo)
    results = []
    runner = threading.Thread(target=lambda: results.append(sh(c, "echo go > started; exec sleep 9874.25")))
    runner.start()
    with open(fifo) as f:
        assert f.read() == "go\n"
    c.cancel.set()
    runner.join(timeout=10)
    assert not runner.is_alive() and results[0].content.startswith("cancelled by the user after ")
    assert live_commands("sleep 9874.25") == []


def test_mount_points_made_for_the_walls_are_removed_after_the_call(c):
    assert sh(c, "ls -A").content == "exit code 0\n.git\n.loop\n"  # the walls, while the call runs
    assert sorted(os.listdir(c.workspace.root)) == []


def test_a_failed_write_outside_gets_the_note_and_a_plain_executor_adds_none(c):
    result = sh(c, "touch /usr/x")
    assert result.content.endswith("[sandbox] the sandbox lets commands write only the workspace and a private "
                                   "/tmp; the user can add a writable directory with sandbox_writable in their "
                                   "config file, or run with --sandbox off.\n")
    plain = ToolContext(c.workspace, env=c.env, executor=PlainExecutor())
    assert "[sandbox]" not in sh(plain, "echo 'Read-only file system'; exit 1").content
