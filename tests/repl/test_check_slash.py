"""The check in the REPL (a real pty): a configured check runs after each answer, and `/check [CMD]`
runs one on demand."""

from __future__ import annotations

from tests.conftest import where_shells_run
from tests.fakeserver import text, tools, user_texts
from tests.pty import TOOLBAR


def test_a_configured_check_runs_after_the_answer_and_on_demand(term, server, workspace):
    server.add(text("All done."),
               tools(("write_file", {"path": "fixed.txt", "content": "yes\n"})), text("Now it is done."))
    t = term("--check", "test -f fixed.txt", *where_shells_run())
    t.line("fix it")
    out = t.expect(r"done: completed")
    assert "check test -f fixed.txt: failed with exit 1 (attempt 1" in out
    assert "check test -f fixed.txt: passed (attempt 2" in out
    assert user_texts(server.requests[1])[-1].startswith("The check `test -f fixed.txt` failed with exit 1")
    t.prompt()
    t.line("/check")
    assert "check test -f fixed.txt: passed (attempt 1" in t.expect(TOOLBAR)
    t.line("/check echo nope; exit 4")
    t.expect(r"check echo nope; exit 4: failed with exit 4 \(attempt 1")
    assert "nope" in t.prompt()  # the end of its output is shown
    assert len(server.requests) == 3  # /check asks the model nothing
    t.line("/exit")
    assert t.exit_code() == 0
