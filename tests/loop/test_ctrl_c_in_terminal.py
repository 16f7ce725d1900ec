"""Ctrl+C in a real terminal (pexpect) stops the whole turn: a running shell call, a slow grep, an open
approval question. Nothing of the turn runs after it; one-shot exits 130, the REPL returns to its prompt."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import wait_for, where_shells_run
from tests.fakeserver import Reply, text, text_events, tools
from tests.pty import ANSI, TOOLBAR
from tests.tools.test_tools_e2e import nested_venv

THREE_CALLS = (
    ("shell", {"command": "touch started; sleep 30; echo finished"}),
    ("shell", {"command": "echo SECOND > second.txt"}),
    ("write_file", {"path": "third.txt", "content": "third\n"}),
)


@pytest.fixture
def ws(workspace: Path) -> Path:
    return workspace  # conftest's: a.txt ("hello"); `terminal` runs loop in it


def assert_turn_stopped(ws: Path, out: str) -> None:
    assert not (ws / "second.txt").exists() and not (ws / "third.txt").exists()
    assert "finished" not in out.replace("echo finished", "")
    assert out.count("cancelled: by the user") >= 3  # the two calls that never ran, and the killed one
    assert "cancelled: by the user after" in out  # the killed call says so, not "(no output)"


def test_one_shot_ctrl_c_during_a_shell_call_ends_the_run_with_130(terminal, server, ws):
    server.add(tools(*THREE_CALLS), text("all done"))
    t = terminal("--approval", "all", *where_shells_run(), "do three things")
    wait_for(lambda: (ws / "started").exists())
    t.child.sendintr()
    out = t.expect("done: aborted")
    assert t.exit_code() == 130
    assert_turn_stopped(ws, out)
    assert len(server.requests) == 1 and "all done" not in t.seen


def test_repl_ctrl_c_during_a_shell_call_returns_to_the_prompt_with_the_results(terminal, server, ws):
    server.add(tools(*THREE_CALLS), text("next answer"))
    t = terminal("--approval", "all", *where_shells_run())
    t.prompt()
    t.line("do three things")
    wait_for(lambda: (ws / "started").exists())
    t.child.sendintr()
    out = t.expect("done: aborted")
    assert_turn_stopped(ws, out)
    t.prompt()
    assert len(server.requests) == 1
    t.line("what happened?")
    t.expect("done: completed")
    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "tool", "user"]
    assert all(m["content"].startswith("cancelled by the user") for m in sent if m["role"] == "tool")
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_ctrl_c_during_a_slow_grep_returns_within_a_second(terminal, server, ws, tmp_path):
    venv = nested_venv(tmp_path / "venv")
    flag = tmp_path / "rg-started"
    fake = venv / "bin" / "rg"  # a search that takes 30 s; exec, so the killed process holds the pipe
    fake.write_text(f"#!/bin/sh\ntouch {flag}\nexec sleep 30\n")
    fake.chmod(0o755)
    server.add(tools(("grep", {"pattern": "hello"}), ("write_file", {"path": "third.txt", "content": "x"})),
               text("never"))
    t = terminal("--approval", "all", "search", python=str(venv / "bin" / "python"))
    wait_for(flag.exists)
    began = time.monotonic()
    t.child.sendintr()
    out = t.expect("done: aborted")
    assert time.monotonic() - began < 1.0
    assert t.exit_code() == 130
    assert "cancelled: by the user" in out and not (ws / "third.txt").exists()
    assert len(server.requests) == 1


def test_ctrl_c_at_the_approval_question_cancels_the_call_and_ends_the_turn(terminal, server, ws):
    server.add(tools(("shell", {"command": "echo one > one.txt"}),
                     ("write_file", {"path": "third.txt", "content": "x"})), text("after"))
    t = terminal("--approval", "ask", *where_shells_run())
    t.prompt()
    t.line("make files")
    t.expect(r"allow\? \[y/N/a\]")
    t.child.sendintr()
    out = t.expect("done: aborted")
    assert "cancelled: by the user" in out and "denied: the user did not approve" not in out
    assert not (ws / "one.txt").exists() and not (ws / "third.txt").exists()
    t.expect(TOOLBAR)  # back at the prompt, not at a second question
    assert "allow?" not in ANSI_FREE(t.child.before or "")
    t.line("go on")
    t.expect("done: completed")
    tool_msgs = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["cancelled by the user"] * 2
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def ANSI_FREE(s: str) -> str:  # noqa: N802 - reads like the constant it replaces

    return ANSI.sub("", s)


def test_ctrl_c_during_streaming_keeps_the_partial_answer_as_an_interrupted_assistant_message(terminal, server):
    story = "Once upon a time " * 200
    server.add(Reply(events=text_events(story), split=60, delay=0.1), text("Short answer."))
    t = terminal()
    t.prompt()
    t.line("tell a long story")
    t.expect("Once upon a time Once")
    t.child.sendintr()
    t.expect("done: aborted")
    t.prompt()
    t.line("just say hi")
    t.expect("done: completed")
    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]  # never two users in a row
    partial = sent[2]["content"]
    assert partial.startswith("Once upon a time Once") and len(partial) < len(story)
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_ctrl_c_while_waiting_for_a_silent_server_returns_at_once(terminal, server, ws):
    server.add(Reply(events=text_events("late"), delay=30))  # not a byte for 30 s
    t = terminal("say something")
    wait_for(lambda: len(server.requests) == 1)
    began = time.monotonic()
    t.child.sendintr()
    t.expect("done: aborted")
    assert time.monotonic() - began < 1.0
    assert t.exit_code() == 130
