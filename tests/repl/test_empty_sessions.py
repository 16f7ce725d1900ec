"""Review of REPL sessions: a session in which nothing was said is not kept (opening the REPL and
leaving, a /fork or /clear and then leaving), so `--resume last` continues the last conversation
rather than an empty `<stamp>-session`; the file a /clear starts is named by its first task, as the
first file is; a fork is named after what was typed, not loop's notes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakeserver import text, user_texts


def session_files(loop_home: Path) -> list[Path]:
    return sorted((loop_home / "sessions").glob("*/*"))


def test_empty_sessions_are_not_kept_and_resume_last_finds_the_conversation(term, server, workspace, loop_home,
                                                                             run_loop):
    t = term()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
    assert session_files(loop_home) == []  # neither the file nor its lock

    server.add(text("Did it."), text("Other."), text("Continued."))
    t = term()
    t.line("/fork")  # nothing said yet: the file left behind is removed, the fork names no parent
    t.expect("forked: now in")
    t.prompt()
    t.line("!echo from-bang")
    t.expect("go with your next message")
    t.prompt()
    t.line("do the thing")
    t.expect("Did it.")
    t.prompt()
    t.line("/fork")
    t.expect("forked: now in")
    t.prompt()
    t.line("/clear")
    t.expect("new conversation")
    t.prompt()
    t.line("another thing")  # names the new file, as the first task named the first
    t.expect("Other.")
    t.prompt()
    t.line("/clear")  # and this one is left with nothing said
    t.expect("new conversation")
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0

    files = session_files(loop_home)
    assert all(p.suffix == ".jsonl" for p in files), files  # no lock left behind
    heads = {p.stem: json.loads(p.read_text().splitlines()[0]) for p in files}
    assert len(files) == 3, files
    [root] = [stem for stem, head in heads.items() if "parent" not in head]
    assert root.endswith("-do-the-thing")
    children = {stem: head["parent"] for stem, head in heads.items() if stem != root}
    [fork] = [stem for stem, parent in children.items() if parent["session"] == root]
    [cleared] = [stem for stem, parent in children.items() if parent["session"] == fork]
    assert fork.split("-", 1)[1].startswith("do-the-thing") and cleared.endswith("-another-thing"), heads

    resumed = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--json", "--resume", "last",
                       "go on")
    assert resumed.returncode == 0, resumed.stderr
    assert user_texts(server.requests[-1]) == ["another thing", "go on"]
