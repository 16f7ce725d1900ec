"""`task` through the real CLI against the fake server: the child's requests carry only its own short history,
its answer (and session id) is the parent's result, an explore child cannot write, read-only children of one
reply overlap in time, a runaway child stops at the parent's step limit, the child's session sits under the
parent in `loop sessions --tree`, and a project agent cannot widen what it may do."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loopagent.sandbox.probe import probe
from tests.conftest import where_shells_run
from tests.fakeserver import Reply, text, tools

CHILD = "# Child agent"  # in a child's system prompt only
needs_bwrap = pytest.mark.skipif(not probe(os.environ.get("PATH")).works, reason="no working bwrap here")


def is_child(body: dict) -> bool:
    return CHILD in body["messages"][0]["content"]


def run(run_loop, server, ws: Path, *extra: str, task: str = "find the parser", timeout: float = 60):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints",
                    *where_shells_run(), *extra, task, timeout=timeout)


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def responder(parent: list[Reply], child):
    """The parent's replies in order; a child's request answered by `child(body)`."""
    script = iter(parent)
    return lambda body: child(body) if is_child(body) else next(script)


def test_the_childs_answer_is_the_result_and_its_history_is_its_own(run_loop, server, workspace, loop_home):
    secret = "PARENT-ONLY-CONTEXT-7731"
    child_turns = iter([tools(("read_file", {"path": "a.txt"})), text("a.txt says hello (line 1).")])
    server.respond = responder([tools(("task", {"description": "read a.txt", "prompt": "What does a.txt say?"})),
                                text("The child found: hello.")], lambda body: next(child_turns))
    proc = run(run_loop, server, workspace, "--approval", "all", task=f"look at a.txt {secret}")
    assert proc.returncode == 0, proc.stderr
    child_requests = [b for b in server.requests if is_child(b)]
    assert len(child_requests) == 2
    for body in child_requests:  # the child's own short history: nothing of the parent's conversation
        assert secret not in json.dumps(body)
        assert [m["role"] for m in body["messages"]][:2] == ["system", "user"]
        assert {t["function"]["name"] for t in body["tools"]} <= {"read_file", "list_files", "grep", "shell",
                                                                  "todo_write"}
    assert child_requests[0]["messages"][1]["content"] == "What does a.txt say?"
    [result] = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert result["content"].startswith("a.txt says hello (line 1).")
    child_id = result["content"].rsplit("child session ", 1)[1].rstrip("]")
    end = events(proc.stdout)[-1]
    assert end["status"] == "completed" and end["steps"] == 4  # the child's two requests count as the parent's
    tree = run_loop("sessions", "--tree", cwd=workspace)
    lines = tree.stdout.splitlines()
    child_line = next(i for i, line in enumerate(lines) if child_id in line)
    assert "└" in lines[child_line] and "task explore" in lines[child_line]
    parent_id = next(e["id"] for e in events(proc.stdout) if e["type"] == "session")
    assert parent_id in lines[child_line - 1]


@needs_bwrap
def test_an_explore_child_cannot_write_and_two_overlap_in_time(run_loop, server, workspace):
    import threading
    import time

    inside, most, lock = [0], [0], threading.Lock()

    def child(body: dict) -> Reply:
        if any(m["role"] == "tool" for m in body["messages"]):
            return text("the write failed: read-only")
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        deadline = time.monotonic() + 5
        while most[0] < 2 and time.monotonic() < deadline:  # both children in the server at once, or 5 s
            time.sleep(0.01)
        with lock:
            inside[0] -= 1
        return tools(("shell", {"command": "echo pwned > pwned.txt"}), ("write_file", {"path": "w.txt", "content": "x"}))

    calls = [("task", {"description": f"probe {n}", "prompt": f"try to write {n}"}) for n in (1, 2)]
    server.respond = responder([tools(*calls), text("done")], child)
    proc = run(run_loop, server, workspace, "--approval", "all")
    assert proc.returncode == 0, proc.stderr
    assert most[0] == 2  # the two children were waiting on the model at the same time
    assert not (workspace / "pwned.txt").exists() and not (workspace / "w.txt").exists()
    child_results = [m["content"] for b in server.requests if is_child(b) for m in b["messages"] if m["role"] == "tool"]
    assert any("Read-only file system" in c for c in child_results)
    assert any(c.startswith("unknown tool 'write_file'") for c in child_results)  # not offered to explore


def test_a_runaway_child_stops_at_the_parents_step_limit(run_loop, server, workspace):
    server.respond = responder([tools(("task", {"description": "loop", "prompt": "never stop"})), text("never")],
                               lambda body: tools(("list_files", {"path": f"d{len(body['messages'])}"})))
    proc = run(run_loop, server, workspace, "--approval", "all", "--max-steps", "6")
    end = events(proc.stdout)[-1]
    assert end["status"] == "step_limit" and end["steps"] == 6, proc.stdout[-2000:]
    assert len(server.requests) == 6  # the parent's first request and the child's five: no more
    [result] = [e for e in events(proc.stdout) if e["type"] == "tool_result"]
    assert result["is_error"] and "step_limit" in result["content"]


def test_sigint_during_a_child_exits_130_and_leaves_no_process(server, workspace, loop_home):
    import signal
    import subprocess
    import sys

    from tests.conftest import clean_env, wait_for
    from tests.loop.test_signals_headless import finish, marked

    marker = "sleep 47.125"
    child = iter([tools(("shell", {"command": f"{marker}; echo late > late.txt"})), text("slept")])
    server.respond = responder([tools(("task", {"description": "wait", "prompt": "sleep", "agent": "general"})),
                                text("done")], lambda body: next(child))
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(workspace), "--base-url", server.url, "--json",
         "--approval", "all", *where_shells_run(), "do the task"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(loop_home))
    wait_for(lambda: marked(marker) or proc.poll() is not None)
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc)
    assert code == 130, err
    assert out[-1]["type"] == "result" and out[-1]["status"] == "aborted"
    wait_for(lambda: not marked(marker), timeout=10)
    assert not (workspace / "late.txt").exists()
    assert not any(is_child(b) and len(b["messages"]) > 3 for b in server.requests)  # nothing asked after


def test_a_user_agent_runs_with_its_tools_and_a_project_agent_cannot_widen(run_loop, server, workspace, loop_home):
    (loop_home / "agents").mkdir(parents=True)
    (loop_home / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: read_file, grep\nmax_steps: 3\n---\n"
        "Report bugs as file:line lines. REVIEWER-BODY\n")
    (workspace / ".loop" / "agents").mkdir(parents=True)
    (workspace / ".loop" / "agents" / "fixer.md").write_text(
        "---\nname: fixer\ndescription: Fixes things\ntools:\n  - write_file\n  - shell\n---\nWrite freely.\n")
    seen: dict[str, dict] = {}

    def child(body: dict) -> Reply:
        who = "reviewer" if "REVIEWER-BODY" in body["messages"][0]["content"] else "fixer"
        seen.setdefault(who, body)
        if any(m["role"] == "tool" for m in body["messages"]):
            return text(f"{who} done")
        if who == "fixer":
            return tools(("write_file", {"path": "w.txt", "content": "x"}), ("shell", {"command": "echo x > s.txt"}))
        return tools(("read_file", {"path": "a.txt"}))

    calls = [("task", {"description": "review", "prompt": "review a.txt", "agent": "reviewer"}),
             ("task", {"description": "fix", "prompt": "fix a.txt", "agent": "fixer"})]
    server.respond = responder([tools(*calls), text("done")], child)
    proc = run(run_loop, server, workspace, "--approval", "plan")
    assert proc.returncode == 0, proc.stderr
    offered = {who: sorted(t["function"]["name"] for t in body["tools"]) for who, body in seen.items()}
    assert offered == {"reviewer": ["grep", "read_file"], "fixer": ["shell", "write_file"]}
    parent_tools = next(b for b in server.requests if not is_child(b))["tools"]
    task_spec = next(t["function"] for t in parent_tools if t["function"]["name"] == "task")
    assert task_spec["parameters"]["properties"]["agent"]["enum"] == ["explore", "general", "reviewer", "fixer"]
    # the parent is in plan mode: the project's fixer runs narrowed to it, whatever its file says
    results = [m["content"] for b in server.requests if is_child(b) for m in b["messages"] if m["role"] == "tool"]
    assert any(r.startswith("denied by policy: plan mode is on") for r in results)
    assert not (workspace / "w.txt").exists() and not (workspace / "s.txt").exists()


def test_the_parents_timeout_stops_a_child_waiting_on_the_model(run_loop, server, workspace):
    import time

    slow = Reply(events=text("late").events, delay=30)
    server.respond = responder([tools(("task", {"description": "slow", "prompt": "take your time"})), text("x")],
                               lambda body: slow)
    start = time.monotonic()
    proc = run(run_loop, server, workspace, "--approval", "all", "--timeout", "1.5")
    assert time.monotonic() - start < 20
    assert proc.returncode == 3, proc.stderr
    assert events(proc.stdout)[-1]["status"] == "time_limit"
