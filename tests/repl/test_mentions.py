"""`@path` in a real pty: Tab completes workspace paths (not what .gitignore excludes), the file's
numbered content reaches the request, a directory its listing, a denied path and a path outside the
workspace are one line each with nothing attached, and an attached file counts as read for edit_file."""

from __future__ import annotations

import json
from pathlib import Path

from prompt_toolkit.document import Document

from loopagent.cli.repl.complete import ReplCompleter
from tests.fakeserver import text, tools, user_texts


def completions(ws: Path, typed: str) -> list[str]:
    found = ReplCompleter({}, ws).get_completions(Document(typed), None)
    return [c.text for c in found]


def test_completion_leaves_out_what_gitignore_excludes(tmp_path):
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / "src" / "gen").mkdir(parents=True)
    (ws / "bundle.js").write_text("x")
    (ws / "src" / "gen" / "x.py").write_text("x")
    (ws / "src" / "keep.py").write_text("x")
    (ws / "src" / "debug.log").write_text("x")
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "src" / ".gitignore").write_text("gen/\n")
    assert completions(ws, "see @b") == ["bundle.js"]
    assert completions(ws, "see @src/") == ["keep.py"]
    assert completions(ws, "see @.") == [".gitignore"]


def test_mentions_attach_files_and_listings_and_refuse_denied_and_outside(terminal, server, workspace, loop_home,
                                                                          tmp_path):
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hi')\nprint('two')\n")
    (workspace / "secret.env").write_text("TOKEN=s3cr3t-value\n")
    (tmp_path / "outside.txt").write_text("outside-content\n")
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"deny": ["read_file(secret.env)"]}))
    # The model edits the attached file straight away: no read_file first, so only the attachment
    # can have satisfied the stale-edit check.
    server.add(tools(("edit_file", {"path": "src/main.py", "old_string": "hi", "new_string": "bye"})),
               text("Edited."))
    t = terminal(wait_prompt=True)
    t.child.send("look at @sr")
    t.child.send("\t")  # one candidate: src/
    t.child.send("ma")
    t.child.send("\t")  # one candidate: main.py
    t.expect("main.py")
    t.line(" and @secret.env and @../outside.txt and @src, please")
    out = t.expect("done: completed")
    assert "@secret.env: not attached" in out and "deny rule" in out
    assert "@../outside.txt: not attached" in out and "outside the workspace" in out
    assert "attached @src/main.py" in out and "attached @src" in out
    sent = user_texts(server.requests[0])[-1]
    assert sent.startswith("look at @src/main.py and @secret.env and @../outside.txt and @src, please")
    assert "[attached @src/main.py, as read_file shows it]\n     1\tprint('hi')\n     2\tprint('two')" in sent
    assert "[attached @src, listing of the directory]\nsrc/main.py" in sent
    assert "s3cr3t" not in sent and "outside-content" not in sent
    assert sent.count("[attached") == 2
    result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "has not been read" not in result["content"]
    assert (workspace / "src" / "main.py").read_text() == "print('bye')\nprint('two')\n"
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
