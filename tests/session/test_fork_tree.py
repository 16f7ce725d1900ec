"""Sessions as a tree: /fork in a real terminal, then --resume of both branches; /clear names its
parent; `loop agent --fork SESSION:N` from the command line; `loop sessions --tree`. The parent file
is never rewritten (compared byte for byte)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import wait_for
from tests.fakeserver import text, tools, user_texts
from tests.pty import TOOLBAR


def header_of(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[0])


def sessions_in(loop_home: Path) -> list[Path]:
    return sorted((loop_home / "sessions").glob("*/*.jsonl"))


def resume(run_loop, server, ws: Path, session: str, task: str):
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--resume", session, task)
    assert proc.returncode == 0, proc.stderr
    return user_texts(server.requests[-1])


def test_fork_in_the_repl_then_resume_both_branches(term, server, workspace, loop_home, run_loop, tmp_path):
    server.add(text("First answer."), text("Second answer."), text("Third answer."))
    t = term()
    t.line("first task")
    t.expect("First answer.")
    t.prompt()
    [parent] = sessions_in(loop_home)
    wait_for(lambda: b'"First answer."' in parent.read_bytes())
    before = parent.read_bytes()
    t.line("/approval all")  # the branch's header names the mode in force, not the one loop started with
    t.expect("approval: all")
    t.prompt()
    t.line("/fork")
    out = t.expect(TOOLBAR)
    assert f"{parent.stem} is kept" in out
    t.line("second task")
    t.expect("Second answer.")
    t.prompt()
    t.line(f"/export {tmp_path / 'fork.html'}")
    t.expect("wrote ")
    t.prompt()
    exported = (tmp_path / "fork.html").read_text(encoding="utf-8")
    assert exported.startswith("<!DOCTYPE html>") and "second task" in exported and "Second answer." in exported
    assert f"forked from</span>: {parent.stem} at message 2" in exported
    t.line("/export")  # without a name: under $LOOP_HOME, never into the repository
    t.expect("wrote ")
    t.prompt()
    [default] = (loop_home / "exports").glob("*.md")
    assert default.read_text().startswith("# Session") and "Second answer." in default.read_text()
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]
    t.line("/rewind 2")  # back to before "second task": a branch of the fork
    t.expect(r"\[c\]onversation")
    t.line("c")
    t.expect("conversation rewound")
    t.prompt()
    t.line("\x15/clear")  # Ctrl+U first: the rewound message waits in the prompt
    t.expect("new conversation")
    t.prompt()
    t.line("third task")  # a session in which nothing is said is removed on leaving: say something
    t.expect("Third answer.")
    t.prompt()
    t.line("/exit")
    assert t.exit_code() == 0
    assert parent.read_bytes() == before  # the parent is never rewritten, nor appended to

    by_parent = {header_of(p).get("parent", {}).get("session"): p for p in sessions_in(loop_home)}
    fork = by_parent[parent.stem]
    rewound = by_parent[fork.stem]
    cleared = by_parent[rewound.stem]
    assert header_of(fork)["parent"] == {"session": parent.stem, "message": 2}  # system, user, assistant
    assert (header_of(parent)["approval"], header_of(fork)["approval"]) == ("edits", "all")
    assert header_of(rewound)["parent"] == {"session": fork.stem, "message": 2}
    assert header_of(cleared)["parent"] == {"session": rewound.stem, "message": 0}  # only the system prompt
    # the README's ids: a fork is its family's label numbered, a fork of a fork continues the count;
    # a /clear is a new conversation, named by its own first task
    label = parent.stem.split("-", 1)[1]
    assert label == "first-task" and fork.stem.endswith("Z-first-task-2") and rewound.stem.endswith("Z-first-task-3")
    assert cleared.stem.endswith("Z-third-task") and default.stem == fork.stem

    server.add(text("parent again"), text("fork again"))
    assert resume(run_loop, server, workspace, parent.stem, "third") == ["first task", "third"]
    assert resume(run_loop, server, workspace, fork.stem, "fourth") == ["first task", "second task", "fourth"]

    tree = run_loop("sessions", "--tree", "-C", str(workspace))
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.splitlines()
    rows = {line.replace("└", "").split()[0]: i for i, line in enumerate(lines)}  # id -> its line
    assert lines[rows[parent.stem]].startswith(parent.stem)
    assert lines[rows[fork.stem]].startswith(f" └ {fork.stem}") and "(at msg 2)" in lines[rows[fork.stem]]
    assert lines[rows[rewound.stem]].startswith(f"    └ {rewound.stem}")
    assert lines[rows[cleared.stem]].startswith(f"       └ {cleared.stem}")
    assert rows[parent.stem] < rows[fork.stem] < rows[rewound.stem] < rows[cleared.stem]


def test_fork_from_the_command_line_at_a_message(run_loop, server, workspace, loop_home):
    server.add(tools(("read_file", {"path": "a.txt"})), text("It says hello."))
    first = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--json", "read a.txt")
    assert first.returncode == 0, first.stderr
    [parent] = sessions_in(loop_home)
    before = parent.read_bytes()

    server.add(text("Another way."))  # message 2 is the reply with the call: its result comes along
    proc = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--json", "--fork",
                    f"{parent.stem}:2", "try another way")
    assert proc.returncode == 0, proc.stderr
    sent = server.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[-1]["content"] == "try another way" and "hello" in sent[3]["content"]
    assert parent.read_bytes() == before
    [fork] = [p for p in sessions_in(loop_home) if p != parent]
    assert json.loads(proc.stdout.splitlines()[0])["id"] == fork.stem
    assert fork.stem.endswith("Z-read-a-txt-2")  # the family's label, not the new message's
    assert header_of(fork)["parent"] == {"session": parent.stem, "message": 3}
    records = [json.loads(line) for line in fork.read_text().splitlines()]
    assert [r["index"] for r in records if r["type"] == "message"] == [0, 1, 2, 3, 4, 5]

    bad = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--fork", f"{parent.stem}:99", "again")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "cannot fork at message 99" in bad.stderr
    both = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--fork", parent.stem, "--resume",
                    "last", "again")
    assert both.returncode == 1 and "cannot be combined" in both.stderr
    assert len(sessions_in(loop_home)) == 2 and parent.read_bytes() == before


def test_fork_points_and_the_family_in_process():
    import pytest

    from loopagent.errors import SessionError
    from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
    from loopagent.session.catalog import Summary
    from loopagent.session.family import branch, family, fork_spec
    from loopagent.session.loader import Loaded

    assert fork_spec("abc") == ("abc", None) and fork_spec("abc:4") == ("abc", 4)
    assert fork_spec("/tmp/x.jsonl:2") == ("/tmp/x.jsonl", 2) and fork_spec("/a:b/x.jsonl") == ("/a:b/x.jsonl", None)
    with pytest.raises(SessionError, match="must be a message number"):
        fork_spec("abc:x")
    calls = (ToolCall("1", "read_file", "{}"), ToolCall("2", "grep", "{}"))
    history = [SystemMessage("s"), UserMessage("u"), AssistantMessage(tool_calls=calls),
               ToolResult("1", "read_file", "a"), ToolResult("2", "grep", "b"), AssistantMessage("done")]
    loaded = Loaded(Path("x.jsonl"), {}, history)
    assert branch(loaded, 3) == (history[:5], 4)  # inside a round: its other result comes along
    assert branch(loaded, 1) == (history[:2], 1) and branch(loaded, None) == (history, 5)

    def summary(name: str, parent: str | None = None, created: str = "") -> Summary:
        return Summary(name, Path(name), created, 1, "completed", "t",
                       {"session": parent, "message": 1} if parent else None)

    found = [summary("c", "a", "3"), summary("b", "a", "2"), summary("a"), summary("x", "x"), summary("o", "gone")]
    placed = [(depth, s.id) for depth, s in family(found)]
    assert placed == [(0, "a"), (1, "b"), (1, "c"), (0, "x"), (0, "o")]  # forks oldest first; lost parents roots
    cycle = [summary("p", "q"), summary("q", "p")]
    assert sorted(s.id for _, s in family(cycle)) == ["p", "q"]


def test_fork_ids_are_numbered_within_their_family(tmp_path):
    from datetime import UTC, datetime

    from loopagent.session import SessionWriter, header
    from loopagent.session.catalog import fork_path, sessions_dir

    home, ws = tmp_path / "home", tmp_path / "ws"
    directory = sessions_dir(home, ws)
    directory.mkdir(parents=True)

    def made(stem: str, parent: str | None = None) -> Path:
        path = directory / f"{stem}.jsonl"
        head = header(stem, ws, "m", "http://127.0.0.1:1/v1", "t", {"session": parent, "message": 1} if parent else None)
        SessionWriter.create(path, head).close()
        return path

    at = datetime(2025, 1, 1, 12, 5, 0, tzinfo=UTC)
    root = made("20250101T120000Z-fix-the-test")
    assert fork_path(home, ws, root, at).name == "20250101T120500Z-fix-the-test-2.jsonl"
    second = made("20250101T120100Z-fix-the-test-2", root.stem)
    assert fork_path(home, ws, root, at).name == "20250101T120500Z-fix-the-test-3.jsonl"
    assert fork_path(home, ws, second, at).name == "20250101T120500Z-fix-the-test-3.jsonl"  # not -2-2
    made("20250101T120500Z-fix-the-test-3")  # the same second: the next number, never an existing file
    assert fork_path(home, ws, root, at).name == "20250101T120500Z-fix-the-test-4.jsonl"
    numbered = made("20250101T120200Z-fix-bug-2")  # a task that ends in a number is not a fork
    assert fork_path(home, ws, numbered, at).name == "20250101T120500Z-fix-bug-2-2.jsonl"
    handed = tmp_path / "Their Notes.jsonl"  # a session file from elsewhere
    SessionWriter.create(handed, header("x", ws, "m", "http://127.0.0.1:1/v1", "t")).close()
    assert fork_path(home, ws, handed, at).name == "20250101T120500Z-their-notes-2.jsonl"
