"""A session_start hook's context comes before the task: one user message, the hook's context first,
then the task (the model answered a context sent after the task instead of the task). Through the
real `loop`, one-shot and in the REPL, with a real hook script and the fake server's requests."""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.session.typed import HOOK_END, HOOK_HEAD, typed
from tests.fakeserver import text
from tests.hooks.test_hooks_e2e import script, user_hooks

CONTEXT = "branch main; CI is red on test_api"


def hook(loop_home: Path, tmp_path: Path) -> None:
    user_hooks(loop_home, {"session_start": [{"command": script(tmp_path, "start.sh",
                                                                f'cat >/dev/null\necho "{CONTEXT}"\n')}]})


def users(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def test_one_shot_the_first_request_has_the_context_then_the_task(run_loop, server, workspace, loop_home,
                                                                     tmp_path):
    hook(loop_home, tmp_path)
    server.add(text("fixed"))
    proc = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--json", "fix the api test")
    assert proc.returncode == 0, proc.stderr
    first = server.requests[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user"]  # one user message, not two
    content = first[1]["content"]
    assert content == f"{HOOK_HEAD}{CONTEXT}{HOOK_END}\n\nfix the api test"
    assert content.index(CONTEXT) < content.index("fix the api test")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds.index("hook") < kinds.index("user")  # the hook ran before the message was sent
    assert next(e for e in events if e["type"] == "user")["content"] == content  # what the stream says
    session = next((loop_home / "sessions").rglob("*.jsonl"))
    saved = [json.loads(line) for line in session.read_text().splitlines()]
    assert [r["content"] for r in saved if r.get("role") == "user"] == [content]  # ... the file holds
    assert typed(content) == "fix the api test"  # listings and /rewind show only the task


def test_repl_the_first_turn_has_the_context_then_the_task_and_only_the_first(term, server, loop_home,
                                                                                tmp_path):
    hook(loop_home, tmp_path)
    server.add(text("first answer"), text("second answer"))
    t = term()
    t.line("first task")
    t.expect("done: completed")
    t.prompt()
    t.line("second task")
    t.expect("done: completed")
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
    assert users(server.requests[0]) == [f"{HOOK_HEAD}{CONTEXT}{HOOK_END}\n\nfirst task"]
    assert users(server.requests[1]) == [users(server.requests[0])[0], "second task"]  # once per session
    session = next((loop_home / "sessions").rglob("*.jsonl"))
    assert session.stem.endswith("first-task")  # named after what was typed, not the hook's text
