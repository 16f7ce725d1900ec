"""MCP servers through the real `loop` entry point: started with a safe path (a module the model wrote in the
workspace is not imported), their stdout noise in their log (never a Traceback on the terminal), and nothing
of theirs outliving a SIGKILLed loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.conftest import clean_env, wait_for
from tests.fakeserver import text, tools
from tests.hooks.test_lifetime import kill, members, read_pids, running, session_of
from tests.mcp.test_mcp_e2e import SERVER, agent, notes, tool_results, user_file


def test_a_server_run_as_python_m_does_not_import_the_models_module(run_loop, server, workspace, loop_home,
                                                                      tmp_path):
    # The user's server is an installed module run as `python -m notes_server`, in the workspace.
    lib, marker, planted = tmp_path / "lib", tmp_path / "started", tmp_path / "planted-ran"
    lib.mkdir()
    (lib / "notes_server.py").write_text(f"import runpy\nrunpy.run_path({SERVER!r}, run_name='__main__')\n")
    (workspace / "notes_server.py").write_text(f"open({str(planted)!r}, 'a').write('ran\\n')\n")  # the model's
    servers = {"notes": {"command": sys.executable, "args": ["-m", "notes_server"],
                         "env": {"MARKER": str(marker), "PYTHONPATH": str(lib)}}}
    env = {k: v for k, v in clean_env(loop_home).items() if k != "PYTHONSAFEPATH"}
    attack = subprocess.run([sys.executable, "-m", "notes_server"], cwd=workspace, stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=30, env={**env, "PYTHONPATH": str(lib)})
    assert planted.read_text() == "ran\n", attack.stderr  # a plain `python -m` in the workspace runs it
    planted.unlink()
    user_file(loop_home, servers)
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert tool_results(server.requests[1])["call_0_mcp__notes__read_note"]["content"] == "note x: buy milk"
    assert not planted.exists()
    [pid] = read_pids(marker)
    wait_for(lambda: not running(pid), timeout=10)


def test_a_noisy_server_works_keeps_its_noise_in_its_log_and_leaves_no_child(run_loop, server, workspace,
                                                                              loop_home, tmp_path):
    # Started through a shell that leaves a child, as `npx` and `uvx` do: it must not outlive the server.
    bg = tmp_path / "bg"
    servers = notes(tmp_path / "started")
    servers["notes"]["env"]["NOISE"] = "1"
    servers["notes"].update(command="/bin/sh", args=["-c", f"sleep 300 & echo $! > {bg}; exec {sys.executable} {SERVER}"])
    user_file(loop_home, servers)
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), tools(("mcp__notes__read_note", {"name": "y"})),
               text("ok"))
    proc = agent(run_loop, server, workspace)
    [child] = read_pids(bg)
    try:
        assert proc.returncode == 0, proc.stderr
        results = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool"]
        assert results == ["note x: buy milk", "note y: buy milk"]
        terminal = proc.stdout + proc.stderr
        assert "Traceback" not in terminal and "not json" not in terminal and "reading note" not in terminal
        assert "JSONRPC" not in terminal and "warning" not in proc.stderr.lower(), proc.stderr
        log = (loop_home / "logs" / "mcp-notes.log").read_text()
        assert "{not json" in log and "reading note x" in log and "notes server starting" in log
        wait_for(lambda: not running(child), timeout=10)
    finally:
        kill([child])


def test_loop_sigkilled_during_an_mcp_call_leaves_no_process_of_the_server(server, workspace, loop_home, tmp_path):
    # Started through a shell that keeps a child, as `npx` and `uvx` do: the whole group must go.
    marker, napping = tmp_path / "started", tmp_path / "napping"
    start = f"sleep 300 & exec {sys.executable} {SERVER}"
    user_file(loop_home, {"notes": {"command": "/bin/sh", "args": ["-c", start],
                                    "env": {"MARKER": str(marker), "NAPPING": str(napping)}}})
    server.add(tools(("mcp__notes__nap", {"seconds": 60})), text("never asked"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(workspace), "--base-url", server.url, "--json",
         "--approval", "all", "nap"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env=clean_env(loop_home), cwd=workspace)
    session = 0
    try:
        wait_for(lambda: napping.exists() or proc.poll() is not None)
        [pid] = read_pids(marker)
        session = session_of(pid)
        assert len(members(session)) >= 2  # the server and its sleep (and the guard)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        wait_for(lambda: not members(session), timeout=10)
    finally:
        kill(members(session) if session else [])
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_a_server_command_is_found_as_its_own_exec_would_find_it_or_named_as_missing(tmp_path):
    from loopagent.mcp.client import executable

    (tmp_path / "server").write_text("#!/bin/sh\n")
    (tmp_path / "server").chmod(0o755)
    assert executable("./server", "/nowhere", tmp_path) == os.path.join(tmp_path, "./server")
    assert executable("sh", "/nowhere:/bin", tmp_path) == "/bin/sh"
    for missing in ("nope-not-a-program", "./absent"):
        try:
            executable(missing, "/bin:/usr/bin", tmp_path)
        except FileNotFoundError as exc:
            assert missing in str(exc)
        else:
            raise AssertionError(f"{missing} was found")
