"""`!cmd` in a real pty: it runs as typed with no approval question (even in mode ask), in the workspace
(sandboxed where the machine can), its output is shown, nothing is sent on its own, and the command
with its output reaches the next request as context."""

from __future__ import annotations

from tests.conftest import where_shells_run
from tests.fakeserver import text, user_texts
from tests.pty import TOOLBAR


def test_bang_output_goes_with_the_next_message(term, server, workspace, tmp_path):
    server.add(text("I see it failed."), text("ok"))
    unsandboxed = where_shells_run()
    t = term("--approval", "ask", *unsandboxed)
    escaped = tmp_path / "escaped"
    t.line(f"!echo from-bang > made.txt; cat made.txt; echo to-stderr >&2; touch {escaped}; exit 3")
    out = t.expect(TOOLBAR)
    assert "allow?" not in out
    assert "from-bang" in out and "to-stderr" in out and "exit code 3" in out
    assert (workspace / "made.txt").read_text() == "from-bang\n"
    assert unsandboxed or not escaped.exists()  # in the sandbox, like the shell tool: only the workspace is writable
    assert server.requests == []  # not sent on its own
    t.line("what happened?")
    t.expect("done: completed")
    sent = user_texts(server.requests[0])
    assert sent[-1].startswith("[the user ran a command in the workspace]\n$ echo from-bang > made.txt;")
    assert "exit code 3\nfrom-bang\nto-stderr" in sent[-1]
    assert sent[-1].endswith("\n\nwhat happened?")
    t.line("and now?")
    t.expect("done: completed")
    assert user_texts(server.requests[1])[-1] == "and now?"  # the output went once
    t.prompt()  # Ctrl+D at the prompt, not in the moment the turn ends
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_clear_drops_a_commands_output_not_yet_sent(term, server, workspace):
    server.add(text("ok"))
    t = term(*where_shells_run())
    t.line("!echo for-the-old-conversation")
    t.expect("go with your next message")
    t.line("/clear")
    t.expect("new conversation")
    t.line("start afresh")
    t.expect("done: completed")
    assert user_texts(server.requests[0]) == ["start afresh"]  # the old conversation's note went with it
    t.prompt()  # Ctrl+D at the prompt, not in the moment the turn ends
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
