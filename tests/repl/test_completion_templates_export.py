"""Review of the REPL's prompt features on a real pty: Tab after `@` offers only the workspace and
never what .gitignore excludes however the folder is spelled (`./`, `src//`, `../`, a link out,
`.git/`); a template's front matter gives its /help line and is not sent; /export titles an
interactive session with the name `loop sessions` and `--resume` know it by."""

from __future__ import annotations

import subprocess
from pathlib import Path

from prompt_toolkit.document import Document

from loopagent.cli.repl.complete import ReplCompleter
from loopagent.compose.templates import Template, front_matter
from tests.fakeserver import text, user_texts
from tests.pty import TOOLBAR


def completions(ws: Path, typed: str) -> list[str]:
    return [c.text for c in ReplCompleter({}, ws).get_completions(Document(typed), None)]


def test_completion_stays_in_the_workspace_and_out_of_ignored_files(tmp_path):
    ws = tmp_path / "ws"
    for rel in ("build/out.o", "src/keep.py", "src/gen/x.py", "src/debug.log", ".git/config"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x")
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "src" / ".gitignore").write_text("gen/\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "private.txt").write_text("x")
    (ws / "out").symlink_to(tmp_path / "elsewhere")
    assert completions(ws, "@./") == ["out/", "src/"]  # not build/, as for "@"
    assert completions(ws, "@./src/") == completions(ws, "@src//") == completions(ws, "@src/") == ["keep.py"]
    assert completions(ws, "@src/../src/") == ["keep.py"]
    for outside in ("@../", "@src/../../", "@/", "@/etc/", "@out/", "@.git/"):
        assert completions(ws, outside) == [], outside


def test_front_matter_is_the_help_line_and_never_sent(tmp_path):
    path = tmp_path / "review.md"
    path.write_text("---\ndescription: 'review a file'\nargument-hint: [file]\n---\nReview $1.\n")
    assert Template("/review", path, "user").help == "review a file (user template)"
    assert Template("/review", path, "user").text() == "Review $1.\n"
    assert front_matter("no block\n---\nx\n") == ({}, "no block\n---\nx\n")
    assert front_matter("---\nnot closed\n") == ({}, "---\nnot closed\n")


def test_completion_templates_and_export_on_a_pty(terminal, server, workspace, loop_home, tmp_path):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, timeout=30)
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    (workspace / "bundle.js").write_text("var x = 1;\n")
    (tmp_path / "outside-secret-dir").mkdir()
    (loop_home / "prompts").mkdir(parents=True)
    (loop_home / "prompts" / "review.md").write_text("---\ndescription: review a file\n---\nReview $1 now.\n")
    server.add(text("Read it."), text("Reviewed."))
    t = terminal(wait_prompt=True)
    t.child.send("see @./bu")
    t.child.send("\t")  # one candidate once build/ (ignored) is left out: bundle.js
    t.child.send(" and @../outside-s")
    t.child.send("\t")  # outside the workspace: nothing offered, nothing inserted
    t.line(" ok")
    t.expect("Read it.")
    t.prompt()
    sent = user_texts(server.requests[0])[-1]
    assert sent.startswith("see @./bundle.js and @../outside-s ok"), sent
    assert "var x = 1;" in sent and "outside-secret-dir" not in sent

    t.line("/help")
    assert "/review       review a file (user template)" in t.expect(TOOLBAR)
    t.line("/review a.txt")
    t.expect("Reviewed.")
    t.prompt()
    assert user_texts(server.requests[1])[-1] == "Review a.txt now."

    [session] = (loop_home / "sessions").glob("*/*.jsonl")
    assert "-see-" in session.stem  # renamed after its first task; the header keeps "<stamp>-session"
    t.line(f"/export {tmp_path / 'out.md'}")
    t.expect("wrote ")
    t.prompt()
    exported = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert exported.startswith(f"# Session {session.stem}\n"), exported[:80]  # not "<stamp>-session"
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_init_cancelled_says_so_and_writes_nothing(terminal, server, workspace):
    import threading

    asked = threading.Event()
    release = threading.Event()

    def held(body):
        asked.set()
        release.wait(20)
        return text("# AGENTS\n")

    server.add(held, text("Hello."))
    t = terminal(wait_prompt=True)
    try:
        t.line("/init")
        assert asked.wait(20)
        t.child.send("\x03")
        out = t.expect(r"no AGENTS\.md[^\r\n]*") + t.child.after  # the line that follows the cancelled run
    finally:
        release.set()
    assert "cancelled by the user" in out and "no AGENTS.md written" in out
    assert "the model wrote nothing" not in out and not (workspace / "AGENTS.md").exists()
    t.prompt()
    t.line("hello")
    t.expect("Hello.")
    t.prompt()
    assert user_texts(server.requests[-1]) == ["hello"]  # the draft stayed out of the conversation
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
