"""/init in a real pty with a scripted model: only read-only tools are offered, the draft is shown as a
diff and written only when approved, an existing AGENTS.md is kept unless the person confirms, and
the drafting stays out of the conversation."""

from __future__ import annotations

from tests.fakeserver import text, tools, user_texts
from tests.pty import TOOLBAR

DRAFT = "```markdown\n# AGENTS.md\n\n## Build\n\npip install -e .\n```"


def test_init_drafts_with_read_only_tools_and_writes_after_approval(term, server, workspace):
    server.add(text(DRAFT),  # the first draft is declined
               tools(("list_files", {})), tools(("write_file", {"path": "AGENTS.md", "content": "sneaky"})),
               text(DRAFT), text("a normal answer"))
    t = term()
    t.line("/init")
    out = t.expect(r"write AGENTS\.md\? \[y/N\]")
    assert "+# AGENTS.md" in out and "+pip install -e ." in out and "```" not in out
    t.line("n")
    assert "AGENTS.md not written" in t.expect(TOOLBAR)
    assert not (workspace / "AGENTS.md").exists()
    offered = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert offered and "read_file" in offered and not offered & {"write_file", "edit_file", "shell"}
    t.line("/init")
    t.expect(r"write AGENTS\.md\? \[y/N\]")
    t.line("y")
    t.expect("wrote AGENTS.md")
    assert (workspace / "AGENTS.md").read_text() == "# AGENTS.md\n\n## Build\n\npip install -e .\n"
    refused = [m for m in server.requests[3]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "unknown tool 'write_file'" in refused
    t.prompt()
    t.line("/init")
    t.expect(r"AGENTS\.md exists; draft a new one")
    t.line("")
    assert "AGENTS.md kept" in t.expect(TOOLBAR)
    assert len(server.requests) == 4  # no model asked
    t.line("hello")
    t.expect("done: completed")
    assert user_texts(server.requests[-1]) == ["hello"]  # the drafting is not part of the conversation
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
