"""The shell tool on real processes: timeouts kill the whole tree, output is clipped, secrets stay out."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from loopagent.secrets import scrubbed_env
from loopagent.tools.base import ToolContext
from loopagent.tools.shell import Shell, ShellParams, alive
from loopagent.tools.workspace import Workspace


@pytest.fixture
def c(tmp_path: Path) -> ToolContext:
    return ToolContext(Workspace(tmp_path), env=scrubbed_env(os.environ))


def sh(c: ToolContext, command: str, timeout: float | None = None):
    return Shell().run(ShellParams(command=command, timeout=timeout), c)


def gone_soon(pid: int, within: float = 5.0) -> bool:
    """True once `pid` is dead (missing or a zombie); bounded wait, since SIGKILL lands asynchronously."""
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_output_starts_with_the_exit_code_and_runs_in_the_workspace(c):
    result = sh(c, "echo out; echo err >&2; pwd")
    assert not result.is_error
    assert result.content == f"exit code 0\nout\nerr\n{c.workspace.root}\n"


def test_non_zero_exit_is_an_error_with_the_code(c):
    result = sh(c, "echo failing; exit 3")
    assert result.is_error and result.content == "exit code 3\nfailing\n"


def test_stdin_is_at_eof_at_once(c):
    result = sh(c, "cat; read -r line; echo \"read=$? line=[$line]\"", timeout=10)
    assert result.content == "exit code 0\nread=1 line=[]\n"


def test_timeout_kills_the_grandchild_too(c):
    pidfile = c.workspace.root / "grandchild.pid"
    started = time.monotonic()
    result = sh(c, f"bash -c 'sleep 300 & echo $! > {pidfile}; wait' & sleep 300", timeout=1)
    assert time.monotonic() - started < 10
    assert result.is_error and result.content.startswith("timed out after 1 s; the command and its processes")
    pid = int(pidfile.read_text())
    assert not alive(pid)  # the tool waited until the tree was gone


def test_descendant_that_left_the_session_is_killed_and_does_not_hang_the_read(c):
    pidfile = c.workspace.root / "escaped.pid"
    # setsid gives the child its own session (out of reach of killpg); it keeps the output pipe open.
    result = sh(c, f"setsid sleep 300 & echo $! > {pidfile}; wait", timeout=1)
    assert "timed out after 1 s" in result.content
    assert not alive(int(pidfile.read_text()))


def test_orphan_holding_the_pipe_does_not_hang_a_finished_command_and_dies_with_it(c):
    pidfile = c.workspace.root / "orphan.pid"
    try:
        # The subshell exits at once, so the sleeper is orphaned in its own session with our pipe:
        # out of reach of the session sweep, reparented to loop (the subreaper) and killed there.
        result = sh(c, f"(setsid sleep 300 & echo $! > {pidfile}); echo finished", timeout=30)
        assert result.content == "exit code 0\nfinished\n"
        assert not alive(int(pidfile.read_text()))  # dead as the call returns, no wait needed
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_background_jobs_do_not_outlive_the_call(c):
    result = sh(c, "sleep 300 & echo $!")
    pid = int(result.content.splitlines()[1])
    assert gone_soon(pid)


def test_environment_has_no_secrets(tmp_path):
    environ = {**os.environ, "MY_SERVICE_TOKEN": "tok-123", "DB_PASSWORD": "hunter2", "AWS_SECRET_ACCESS_KEY": "aws1",
               "GH_AUTH": "gh1", "SOME_CREDENTIALS": "cred1", "WRAPPED": "prefix-sk-live-xyz-suffix",
               "ALLOWED_API_KEY": "allowed-value", "PLAIN": "visible"}
    env = scrubbed_env(environ, allow=["ALLOWED_API_KEY"], secrets=("sk-live-xyz",))
    out = sh(ToolContext(Workspace(tmp_path), env=env), "env").content
    for secret in ["tok-123", "hunter2", "aws1", "gh1", "cred1", "sk-live-xyz"]:
        assert secret not in out
    assert "PLAIN=visible" in out and "ALLOWED_API_KEY=allowed-value" in out


def test_a_megabyte_of_output_keeps_first_and_last_lines_and_says_what_was_dropped(c):
    full = [f"line {i} xxxxxxxxxxxx" for i in range(1, 50_001)] + ["ValueError: the last line"]
    assert len("\n".join(full)) > 1_000_000
    result = sh(c, "seq -f 'line %g xxxxxxxxxxxx' 1 50000; echo 'ValueError: the last line'; exit 1")
    lines = result.content.splitlines()
    assert result.is_error and lines[0] == "exit code 1" and len(result.content) < 40_000
    markers = [i for i, line in enumerate(lines) if line.startswith("[... ")]
    assert len(markers) == 1
    head, tail = lines[1 : markers[0]], lines[markers[0] + 1 :]
    assert head == full[: len(head)] and tail == full[-len(tail) :]  # whole lines from both ends
    assert head[0] == "line 1 xxxxxxxxxxxx" and tail[-1] == "ValueError: the last line"
    dropped = full[len(head) : len(full) - len(tail)]
    expected = f"[... {len(dropped)} lines ({sum(len(x) + 1 for x in dropped)} bytes) clipped ...]"
    assert lines[markers[0]] == expected


def test_undecodable_output_is_replaced_not_fatal(c):
    result = sh(c, "printf 'ok \\377\\376 bytes\\n'")
    assert result.content == "exit code 0\nok \ufffd\ufffd bytes\n"


def test_cancel_kills_the_running_command(c, tmp_path):
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    results = []
    runner = threading.Thread(target=lambda: results.append(sh(c, f"echo go > {fifo}; exec sleep 300")))
    runner.start()
    with open(fifo) as f:  # returns once the command runs
        assert f.read() == "go\n"
    c.cancel.set()
    runner.join(timeout=10)
    assert not runner.is_alive()
    assert results[0].is_error and results[0].content.startswith("cancelled by the user after ")


def test_cancel_set_before_the_call_runs_nothing(c):
    c.cancel.set()
    with pytest.raises(Exception, match="cancelled by the user before the command started"):
        sh(c, f"touch {c.workspace.root / 'ran'}")
    assert not (c.workspace.root / "ran").exists()
