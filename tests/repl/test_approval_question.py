"""The approval question in a real pty: Ctrl+C at it ends the question line first, `ask` mode shows an
edit's diff once, and with stdout redirected the question and its context still reach the terminal."""

from __future__ import annotations

import re
import shlex
import sys

import pexpect
import pytest

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import text, tools
from tests.pty import ANSI

EDIT = (("read_file", {"path": "a.txt"}),
        ("edit_file", {"path": "a.txt", "old_string": "hello", "new_string": "bye"}))


def screen(t) -> str:
    return ANSI.sub("", t.seen).replace("\r", "")


@pytest.mark.parametrize("color", [False, True])
def test_ask_mode_shows_the_edit_diff_once(terminal, server, workspace, color):
    server.add(tools(EDIT[0]), tools(EDIT[1]), text("edited"))
    t = terminal("--approval", "ask", "edit a.txt", color=color)
    t.expect(r"allow\? \[y/N/a\]")
    t.line("y")
    t.expect("done: completed")
    assert t.exit_code() == 0
    assert (workspace / "a.txt").read_text() == "bye\n"
    shown = screen(t)
    assert shown.count("+bye") == 1 and shown.count("-hello") == 1, shown


@pytest.mark.parametrize("repl", [False, True])
def test_ctrl_c_at_the_question_ends_its_line_before_the_result(terminal, server, repl):
    server.add(tools(("shell", {"command": "echo hi > made.txt"})), text("never"))
    t = terminal("--approval", "ask", *where_shells_run(), *([] if repl else ["make a file"]), color=repl)
    if repl:
        t.prompt()
        t.line("make a file")
    t.expect(r"allow\? \[y/N/a\]")
    t.child.sendintr()
    t.expect("done: aborted")
    shown = screen(t)
    assert re.search(r"allow\? \[y/N/a\] (\^C)?\n", shown), shown
    assert re.search(r"\n\s*cancelled: by the user\n", shown), shown


def test_with_stdout_redirected_the_question_and_its_context_go_to_the_terminal(server, workspace, loop_home):
    server.add(tools(("shell", {"command": "echo hi > made.txt"})), text("made it"))
    out = workspace.parent / "out.txt"
    args = ["-m", "loopagent", "agent", "-C", str(workspace), "--base-url", server.url, "--approval", "ask",
            *where_shells_run(), "make a file"]
    command = f"exec {shlex.quote(sys.executable)} {' '.join(map(shlex.quote, args))} > {shlex.quote(str(out))}"
    env = clean_env(loop_home)
    env["TERM"] = "xterm"
    child = pexpect.spawn("bash", ["-c", command], env=env, cwd=str(workspace), encoding="utf-8", timeout=20)
    try:
        child.expect(r"allow\? \[y/N/a\]")
        asked = ANSI.sub("", child.before)
        child.send("y\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "$ echo hi > made.txt" in asked and "needs approval" in asked
    assert child.exitstatus == 0
    assert (workspace / "made.txt").read_text() == "hi\n"
    written = out.read_text()
    assert "done: completed" in written and "made it" in written
    assert "needs approval" not in written and "allow?" not in written
