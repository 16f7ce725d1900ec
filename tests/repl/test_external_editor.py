"""The external editor in a real pty: /edit and Ctrl+X Ctrl+E open $EDITOR on the current input and the
saved text becomes the input (sent only when Enter is pressed)."""

from __future__ import annotations

from tests.conftest import clean_env
from tests.fakeserver import text, user_texts
from tests.pty import Terminal


def test_edit_and_ctrl_x_ctrl_e_put_the_editors_text_into_the_input(server, workspace, loop_home, tmp_path):
    editor = tmp_path / "editor.sh"
    # A stand-in for an editor: keeps what it was given and adds a known text.
    editor.write_text('#!/bin/sh\nprintf "%s|from the editor\\n" "$(cat "$1")" > "$1"\n')
    editor.chmod(0o755)
    env = clean_env(loop_home)
    env.update(TERM="xterm", COLUMNS="120", LINES="40", EDITOR=str(editor))
    env.pop("VISUAL", None)
    server.add(text("one"), text("two"))
    t = Terminal(["agent", "-C", str(workspace), "--base-url", server.url], env, workspace)
    try:
        t.prompt()
        t.line("/edit")
        t.expect(r"\|from the editor")
        assert server.requests == []  # the edited text waits in the input
        t.line("")
        t.expect("done: completed")
        assert user_texts(server.requests[0])[-1] == "|from the editor"
        t.prompt()
        t.child.send("draft")
        t.child.sendcontrol("x")
        t.child.sendcontrol("e")
        t.expect(r"\|from the editor")  # drawn after "draft": the redraw writes only what changed
        t.line("")
        t.expect("done: completed")
        assert user_texts(server.requests[1])[-1] == "draft|from the editor"
        t.child.sendcontrol("d")
        assert t.exit_code() == 0
    finally:
        t.child.close(force=True)
