"""`loop agent` in a real pseudo-terminal (pexpect) against the fake server: REPL, approvals, undo, Ctrl+C."""

from __future__ import annotations

import json

from tests.conftest import clean_env
from tests.fakeserver import Reply, text, text_events, tool_events, tools
from tests.pty import TOOLBAR, Terminal


def test_task_shows_tool_line_and_diff_then_undo_restores(term, server, workspace):
    server.add(tools(("write_file", {"path": "a.txt", "content": "bye\n"})), text("Changed it."))
    t = term()
    t.line("change a.txt")
    out = t.expect(r"done: completed, 2 steps")
    assert "[1] write_file a.txt" in out
    assert "-hello" in out and "+bye" in out and "+1 -1" in out
    assert "Changed it." in out
    assert (workspace / "a.txt").read_text() == "bye\n"
    t.prompt()
    t.line("/undo")
    assert "undone" in t.expect(TOOLBAR)
    assert (workspace / "a.txt").read_text() == "hello\n"
    t.line("/redo")
    t.prompt()
    assert (workspace / "a.txt").read_text() == "bye\n"
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_approval_answered_with_y_and_with_enter(term, server, workspace):
    server.add(tools(("shell", {"command": "echo yes > made.txt"})), text("ran it"),
               tools(("shell", {"command": "echo no > other.txt"})), text("skipped"))
    t = term()
    t.line("make a file")
    assert "$ echo yes > made.txt" in t.expect(r"allow\? \[y/N/a\]")
    t.line("y")
    assert "ok:" in t.expect("done: completed")
    assert (workspace / "made.txt").read_text() == "yes\n"
    t.prompt()
    t.line("make another")
    t.expect(r"allow\? \[y/N/a\]")
    t.line("")
    assert "denied: the user did not approve this call" in t.expect("done: completed")
    assert not (workspace / "other.txt").exists()
    denied = server.requests[3]["messages"][-1]
    assert denied["role"] == "tool" and "denied" in denied["content"]
    t.prompt()
    t.line("/exit")
    assert t.exit_code() == 0


def test_ctrl_c_during_a_slow_stream_returns_the_prompt_with_a_valid_history(term, server):
    story = "Once upon a time " * 200
    server.add(Reply(events=text_events(story), split=60, delay=0.1), text("Short answer."))
    t = term()
    t.line("tell a long story")
    t.expect("Once upon a time Once")
    t.child.sendintr()
    t.expect("done: aborted")
    t.prompt()
    t.line("just say hi")
    t.expect("Short answer.")
    t.expect("done: completed")
    roles = [m["role"] for m in server.requests[1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # the cut-off reply is kept, marked interrupted
    assert server.requests[1]["messages"][2]["content"].startswith("Once upon a time")
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_ctrl_c_while_a_tool_runs_answers_every_call(term, server, workspace):
    server.add(tools(("shell", {"command": "sleep 30"}), ("read_file", {"path": "a.txt"})), text("ok then"))
    t = term("--approval", "all")
    t.line("wait a while")
    t.expect(r"\[1\] shell sleep 30")
    t.child.sendintr()
    out = t.expect("done: aborted")
    assert "cancelled: by the user" in out
    t.prompt()
    t.line("go on")
    t.expect("done: completed")
    nxt = server.requests[1]["messages"]
    calls = [c["id"] for m in nxt if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = {m["tool_call_id"]: m["content"] for m in nxt if m["role"] == "tool"}
    assert len(calls) == 2 and set(results) == set(calls)
    assert all("cancelled by the user" in content for content in results.values())
    t.prompt()
    t.child.send("\x03\x03")  # two Ctrl+C at an empty prompt leave (one only says how: tests/repl/test_exit_keys.py)
    assert t.exit_code() == 0


def test_typing_during_a_turn_is_queued_and_sent_when_the_turn_ends(term, server, workspace):
    slow = tool_events(("read_file", {"path": "a.txt"}), text="Reading it.")
    size = len(Reply(events=slow).stream_bytes())
    server.add(Reply(events=slow, split=size // 12, delay=0.1), text("noted"), text("checked b.txt"))
    t = term()
    t.line("read a.txt")
    t.expect("Reading it.")  # the turn runs: what is typed now waits for its end, not the next prompt
    t.line("also check b.txt")
    t.expect("queued: also check b.txt")
    t.expect("done: completed")
    t.expect("queued, sending: also check b.txt")
    t.expect("done: completed")
    assert server.requests[1]["messages"][-1]["role"] == "tool"  # not slipped in between two steps
    assert server.requests[2]["messages"][-1] == {"role": "user", "content": "also check b.txt"}
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_slash_commands_unknown_rewind_and_model(term, server, workspace):
    server.add(text("first answer"), text("second answer"), text("again"))
    t = term()
    t.line("/nope")
    out = t.expect(TOOLBAR)
    assert "unknown command /nope" in out and "/undo" in out and "/rewind" in out
    t.line("first question")
    t.expect("done: completed")
    t.prompt()
    t.line("second question")
    t.expect("done: completed")
    t.prompt()
    t.line("/model other-model")
    t.prompt()
    t.line("/rewind")
    t.expect(r"rewind to which message\?")
    t.line("2")
    t.expect(r"\[c\]onversation")
    t.line("c")
    t.expect("conversation rewound")
    t.prompt()
    t.line("")  # the chosen message is back in the input line: Enter sends it again
    t.expect("done: completed")
    last = server.requests[-1]
    assert last["model"] == "other-model"
    assert [m["content"] for m in last["messages"] if m["role"] == "user"] == ["first question", "second question"]
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "user"]


def test_colour_terminal_renders_markdown_and_tool_lines(term, server, workspace):
    server.add(tools(("write_file", {"path": "a.txt", "content": "bye\n"})),
               text("## Result\n\nChanged **a.txt**.\n\n```python\nprint('x')\n```\n"))
    t = term(color=True)
    t.line("change a.txt")
    out = t.expect("done: completed")
    assert "[1] write_file a.txt" in out and "+bye" in out
    assert "Result" in out and "## Result" not in out and "**" not in out
    assert "\x1b[" in t.seen  # colour codes were sent
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_one_shot_run_interrupted_by_ctrl_c_exits_130_with_the_session_saved(server, workspace, loop_home):
    server.add(Reply(events=text_events("slowly " * 300), split=50, delay=0.1))
    env = clean_env(loop_home)
    env["TERM"] = "xterm"
    t = Terminal(["agent", "-C", str(workspace), "--base-url", server.url, "say things"], env, workspace)
    try:
        t.expect("slowly slowly")
        t.child.sendintr()
        t.expect("done: aborted")
        assert t.exit_code() == 130
    finally:
        t.child.close(force=True)
    sessions = list((loop_home / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1
    records = [json.loads(line) for line in sessions[0].read_text().splitlines()]
    assert records[-1]["type"] == "end" and records[-1]["status"] == "aborted"
    assert [r.get("role") for r in records if r.get("type") == "message"] == ["system", "user", "assistant"]


def test_ask_mode_shows_the_diff_an_edit_would_make_before_asking(term, server, workspace):
    server.add(tools(("write_file", {"path": "a.txt", "content": "bye\n"})), text("done"))
    t = term("--approval", "ask")
    t.line("change a.txt")
    shown = t.expect(r"allow\? \[y/N/a\]")
    assert "write_file would change a.txt  +1 -1" in shown and "-hello" in shown and "+bye" in shown
    assert (workspace / "a.txt").read_text() == "hello\n"  # nothing ran before the answer
    t.line("y")
    after = t.expect("done: completed")
    assert "ok: wrote a.txt" in after and "-hello" not in after  # the diff just approved is not repeated
    assert (workspace / "a.txt").read_text() == "bye\n"
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_without_a_task_and_without_a_terminal_is_a_usage_error(run_loop, server, workspace):
    proc = run_loop("agent", "-C", str(workspace), "--base-url", server.url)
    assert proc.returncode == 2
    assert "give a TASK" in proc.stderr and "Traceback" not in proc.stderr
    assert server.requests == []
