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
