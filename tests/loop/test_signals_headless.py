"""Signals to a headless run (`--json`, no terminal): SIGINT, SIGTERM and SIGHUP during a shell call.

Each stops the turn through the cancel token: the call's process tree is killed, the run ends
`aborted` with a `result` line and exit 130 / 143 / 129, nothing more is asked of the model,
and the session resumes cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import clean_env, wait_for, where_shells_run
from tests.fakeserver import text, tools


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie no longer runs
    except FileNotFoundError:
        return True


def marked(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (also inside a sandbox's PID namespace)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes() and not gone(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def start(server, ws: Path, home: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url, "--json",
         "--approval", "all", *extra, "do the task"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=clean_env(home), cwd=ws)


def finish(proc: subprocess.Popen) -> tuple[int, list[dict], str]:
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    return proc.returncode, [json.loads(line) for line in out.splitlines() if line.strip()], err


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_sigint_during_the_last_call_exits_130_and_asks_the_model_nothing_more(server, ws, loop_home):
    server.add(tools(("shell", {"command": "touch started; sleep 30; echo finished > late.txt"})), text("done"))
    proc = start(server, ws, loop_home, *where_shells_run())
    wait_for(lambda: (ws / "started").exists() or proc.poll() is not None)
    proc.send_signal(signal.SIGINT)
    code, events, err = finish(proc)
    assert code == 130, err
    assert events[-1]["type"] == "result" and events[-1]["status"] == "aborted"
    assert len(server.requests) == 1  # the cancelled result was not sent back for another turn
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["is_error"] and result["content"].startswith("cancelled by the user")
    assert not (ws / "late.txt").exists()
    assert "Traceback" not in err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
@pytest.mark.parametrize("sandbox", ["off", "default"])
def test_sigterm_and_sighup_kill_the_call_end_the_session_and_it_resumes(server, ws, loop_home, signum, code,
                                                                       sandbox):
    marker = f"{7000 + signum}.25"  # a unique `sleep` argument: found in /proc also inside a sandbox
    command = f"sleep {marker} & echo $! > pid; wait"
    server.add(tools(("shell", {"command": command}), ("write_file", {"path": "after.txt", "content": "x"})))
    extra = ["--sandbox", "off"] if sandbox == "off" else where_shells_run()
    proc = start(server, ws, loop_home, *extra)
    wait_for(lambda: (ws / "pid").exists() and (ws / "pid").read_text().strip() != "" or proc.poll() is not None)
    wait_for(lambda: bool(marked(marker)) or proc.poll() is not None)
    proc.send_signal(signum)
    exit_code, events, err = finish(proc)
    assert exit_code == code, err
    last = events[-1]
    assert last["type"] == "result" and last["status"] == "aborted", events
    assert [e["content"][:21] for e in events if e["type"] == "tool_result"] == ["cancelled by the user"] * 2
    assert not (ws / "after.txt").exists()  # nothing of the turn ran after the signal
    if sandbox == "off":  # the pid the command wrote is a host pid
        child = int((ws / "pid").read_text())
        wait_for(lambda: gone(child), timeout=5)
    wait_for(lambda: not marked(marker), timeout=5)
    session = Path(events[0]["path"])
    records = [json.loads(line) for line in session.read_text().splitlines()]
    assert records[-1]["type"] == "end" and records[-1]["status"] == "aborted"
    assert len(server.requests) == 1

    server.add(text("resumed fine"))
    resumed = subprocess.run(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url, "--json",
         "--resume", "last"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        env=clean_env(loop_home), cwd=ws)
    assert resumed.returncode == 0, resumed.stderr
    assert "repair" not in resumed.stderr  # the session was ended cleanly: nothing to repair
    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert all(m["content"].startswith("cancelled by the user") for m in sent if m["role"] == "tool")


def test_a_token_set_before_the_run_runs_nothing(server, ws, loop_home):
    """The loop's own contract: a cancelled token stops the run before its first request."""
    from loopagent.cancel import Cancel
    from loopagent.client.openai import OpenAIClient
    from loopagent.loop import Agent
    from loopagent.messages import UserMessage
    from loopagent.tools import Registry, ToolContext, default_tools
    from loopagent.tools.workspace import Workspace

    cancel = Cancel()
    cancel.set()
    agent = Agent(model=OpenAIClient(base_url=server.url, model="m"), registry=Registry(default_tools()),
                  tools=ToolContext(Workspace(ws)))
    end = agent.run([UserMessage("hi")], "hi", cancel)
    assert end.status == "aborted" and end.exit_code == 130 and server.requests == []
    assert os.listdir(ws) == []


def test_sigint_mid_stream_keeps_the_partial_answer_and_the_session_resumes(server, ws, loop_home):
    from tests.fakeserver import Reply, text_events

    story = "Once upon a time " * 200
    server.add(Reply(events=text_events(story), split=60, delay=0.05))
    proc = start(server, ws, loop_home)
    wait_for(lambda: len(server.requests) == 1)
    proc.send_signal(signal.SIGINT)
    code, events, err = finish(proc)
    assert code == 130, err
    assistant = [e for e in events if e["type"] == "assistant"]
    assert len(assistant) == 1 and len(assistant[0]["text"]) < len(story)
    records = [json.loads(line) for line in Path(events[0]["path"]).read_text().splitlines()]
    kept = [r for r in records if r.get("role") == "assistant"]
    assert kept and kept[0]["stop_reason"] == "interrupted" and kept[0]["text"] == assistant[0]["text"]
    server.add(text("resumed"))
    resumed = subprocess.run(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url, "--json",
         "--resume", "last"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        env=clean_env(loop_home), cwd=ws)
    assert resumed.returncode == 0, resumed.stderr
    assert [m["role"] for m in server.requests[1]["messages"]] == ["system", "user", "assistant", "user"]
