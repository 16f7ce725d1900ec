"""Hooks end when their process exits and take what they started with them; nothing of theirs outlives loop.

In-process tables for `run_hook` and `guard`, and two runs of the real `loop` entry point: a hook that
leaves `sleep 300 &` behind, and loop SIGKILLed while a hook runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.hooks import Hook, run_hook
from tests.conftest import clean_env, wait_for, where_shells_run
from tests.fakeserver import text, tools
from tests.hooks.test_hooks_e2e import agent, lines, tool_contents, user_hooks


def state(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]; [] when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def running(pid: int) -> bool:
    return state(pid)[:1] not in ([], ["Z"], ["X"])  # a zombie runs nothing


def session_of(pid: int) -> int:
    return int(state(pid)[3])


def members(session: int) -> list[int]:
    """The processes of a session that still run (a hook's or a server's: the guard leads it)."""
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    return [pid for pid in pids if (s := state(pid)) and s[0] not in ("Z", "X") and int(s[3]) == session]


def kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def read_pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize("body, verdict, reason", [
    ("sleep 300 & echo $! > {bg}; exit 0", "ok", ""),  # on_error block: a timeout would block
    ("sleep 300 & echo $! > {bg}; echo 'not today' >&2; exit 2", "block", "not today"),
    ("sleep 300 & echo $! > {bg}; exit 7", "block", "exit status 7"),  # a failure, closed by on_error
    ("sleep 300 & echo $! > {bg}; echo '{{\"decision\": \"block\", \"reason\": \"said so\"}}'", "block", "said so"),
    ("sleep 300 & echo $! > {bg}; kill -TERM $$", "block", f"exit status -{int(signal.SIGTERM)}"),  # through the guard
])
def test_a_hook_is_done_when_it_exits_and_its_background_job_dies(tmp_path, body, verdict, reason):
    bg = tmp_path / "bg"
    hook = Hook("pre_tool", body.format(bg=bg), timeout=20, on_error="block")
    started = time.monotonic()
    outcome = run_hook(hook, {"event": "pre_tool"}, tmp_path, None, Cancel())
    took = time.monotonic() - started
    [pid] = read_pids(bg)
    try:
        assert took < 5, took  # not its 20 s timeout: the sleep holds the pipes, not the verdict
        assert outcome.verdict == verdict and reason in outcome.reason
        assert "timed out" not in outcome.reason
        wait_for(lambda: not running(pid), timeout=10)
    finally:
        kill([pid])


def test_a_hook_that_closes_its_pipes_and_runs_on_times_out(tmp_path):
    pid_file = tmp_path / "pid"
    hook = Hook("pre_tool", f"echo $$ > {pid_file}; exec >&- 2>&-; sleep 300", timeout=1)
    outcome = run_hook(hook, {"event": "pre_tool"}, tmp_path, None, Cancel())
    assert outcome.verdict == "failed" and outcome.reason == "timed out after 1 s"
    wait_for(lambda: not running(read_pids(pid_file)[0]), timeout=10)


def test_a_hook_that_reads_no_stdin_and_prints_much_is_still_heard(tmp_path):
    hook = Hook("post_tool", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo done >&2", timeout=20)
    outcome = run_hook(hook, {"event": "post_tool", "text": "y" * 2_000_000}, tmp_path, None, Cancel())
    assert outcome.verdict == "ok" and outcome.context.startswith("xxxx") and outcome.context.endswith("[clipped]")


def test_a_hook_runs_with_a_safe_path_in_the_workspace(tmp_path):
    # The model may have written both: a module that shadows the standard library, a program on a relative PATH.
    (tmp_path / "json.py").write_text("print('PLANTED module')\n")
    (tmp_path / "probe").write_text("#!/bin/sh\necho PLANTED program\n")
    (tmp_path / "probe").chmod(0o755)
    command = f"probe; {sys.executable} -c 'import json; print(1 + 1)'"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    env["PATH"] = f":.:{env.get('PATH', '/usr/bin:/bin')}"
    plain = subprocess.run(["/bin/sh", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=30)
    assert plain.stdout.split("\n")[:2] == ["PLANTED program", "PLANTED module"]  # the attack, without loop
    outcome = run_hook(Hook("session_start", command), {}, tmp_path, env, Cancel())
    assert outcome.verdict == "ok" and outcome.context == "2"


def test_guard_ends_the_whole_group_when_its_parent_is_sigkilled():
    # The parent-death signal alone reaches one process: the shell's own children would live on.
    middle = ("import subprocess, sys; from loopagent.spawn import guard; argv = ['sh', '-c', 'sleep 60 & sleep 60']; "
              "p = subprocess.Popen(guard(argv) if sys.argv[1] == 'guard' else argv, start_new_session=True); "
              "print(p.pid, flush=True); p.wait()")
    sessions = {}
    for how in ("plain", "guard"):
        proc = subprocess.Popen([sys.executable, "-c", middle, how], stdout=subprocess.PIPE, text=True)
        sessions[how] = int(proc.stdout.readline())
        need = 3 if how == "guard" else 2  # (the guard,) the shell or the sleep it became, the other sleep
        wait_for(lambda s=sessions[how], n=need: len(members(s)) >= n)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
    try:
        wait_for(lambda: not members(sessions["guard"]), timeout=10)
        assert len(members(sessions["plain"])) >= 2  # without the guard they live on
    finally:
        kill(members(sessions["plain"]) + members(sessions["guard"]))


def test_a_hook_leaving_a_background_job_costs_no_timeout_through_loop(run_loop, server, workspace, loop_home,
                                                                        tmp_path):
    bg = tmp_path / "bg"
    hook = {"match": "shell", "command": f"sleep 300 & echo $! >> {bg}; exit 0", "timeout": 30, "on_error": "block"}
    user_hooks(loop_home, {"pre_tool": [hook]})
    server.add(tools(("shell", {"command": "echo first"})), tools(("shell", {"command": "echo second"})), text("ok"))
    proc = agent(run_loop, server, workspace)
    pids = read_pids(bg)
    try:
        assert proc.returncode == 0, proc.stderr
        assert [c.split()[-1] for c in tool_contents(server.requests[2])] == ["first", "second"]  # neither blocked
        ran = [e for e in lines(proc.stdout) if e["type"] == "hook"]
        assert [e["verdict"] for e in ran] == ["ok", "ok"] and max(e["seconds"] for e in ran) < 5, ran
        assert len(pids) == 2
        wait_for(lambda: not any(running(pid) for pid in pids), timeout=10)
    finally:
        kill(pids)


def test_loop_sigkilled_during_a_hook_leaves_no_process_of_it(server, workspace, loop_home, tmp_path):
    shell = tmp_path / "shell"
    hook = {"match": "shell", "command": f"echo $$ > {shell}.tmp; mv {shell}.tmp {shell}; sleep 300 & sleep 200"}
    user_hooks(loop_home, {"pre_tool": [hook]})
    server.add(tools(("shell", {"command": "echo hi"})), text("never asked"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(workspace), "--base-url", server.url, "--json",
         "--approval", "all", *where_shells_run(), "go"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env=clean_env(loop_home), cwd=workspace)
    session = 0
    try:
        wait_for(lambda: shell.exists() or proc.poll() is not None)
        session = session_of(read_pids(shell)[0])
        wait_for(lambda: len(members(session)) >= 4)  # the guard, the shell and its two sleeps
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        wait_for(lambda: not members(session), timeout=10)
    finally:
        kill(members(session) if session else [])
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
