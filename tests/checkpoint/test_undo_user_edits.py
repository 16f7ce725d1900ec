"""Undo never eats the user's work: what a restore would discard that no call made (the person's edits
and new files, files loop wrote outside a call) is listed as theirs and asked about; headless it is
refused without --yes; a confirmed undo saves it first, so redo returns it byte for byte; the message
names the call the restored state was taken before.

End to end: the real `loop` against the fake server, real files and git, the REPL on a real pty."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from loopagent.checkpoint import Checkpoint, CheckpointError, Recorder, Timeline
from loopagent.checkpoint.plan import Change, Plan, preview
from loopagent.cli.repl.restore_plan import YOURS, done_line, plan_lines
from loopagent.events import ToolFinished
from loopagent.messages import ToolCall, ToolResult
from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import text, tools
from tests.pty import TOOLBAR, Terminal

ROOT = Path(__file__).resolve().parent.parent.parent
HASH = re.compile(r"\b[0-9a-f]{8}\b")


def readme_undo() -> list[str]:
    """The README's `loop undo` example: what the screen shows (the command and the answer left out)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```sh\n$ echo notes > mynotes.txt")
    block = text[start:text.index("```", start + 5)].splitlines()[1:]
    return [closed_up(line) for line in block if not line.startswith(("$ ", "undo these changes?"))]


def closed_up(line: str) -> str:
    """A line with its hashes masked and its columns closed up (a longer path here widens them)."""
    return " ".join(HASH.sub("HASH", line).split())


def files(ws: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `ws`: its bytes and permission bits."""
    return {str(p.relative_to(ws)): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(ws.rglob("*")) if p.is_file()}


def test_undo_lists_the_users_changes_refuses_headless_and_redo_returns_them(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.py").write_text("print(1)\n")
    # `ls` changes nothing, so the write after the first makes no checkpoint of its own: the one restored
    # was taken before `ls` too, but it is the write the undo takes back, and the write it must name. The
    # second `ls` starts from the files as the write left them: going back there would take back only the
    # person's edits below, under that call's name (what undo did before).
    ls = tools(("shell", {"command": "ls"}))
    server.add(ls, tools(("write_file", {"path": "a.txt", "content": "agent\n"})), ls, text("done"))
    run = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--approval", "all", *where_shells_run(),
                   "write a.txt")
    assert run.returncode == 0, run.stderr
    (ws / "mynotes.txt").write_text("notes\n")
    (ws / "mynotes.txt").chmod(0o600)
    with (ws / "main.py").open("a") as f:
        f.write("x\n")
    (ws / "deep" / "er").mkdir(parents=True)
    (ws / "deep" / "er" / "blob.bin").write_bytes(bytes(range(256)))
    mine = files(ws)

    refused = run_loop("undo", "-C", str(ws))  # stdin is not a terminal: no one to ask
    assert refused.returncode == 2, refused.stdout + refused.stderr
    shown = refused.stdout.splitlines()
    assert shown[0].startswith("undo: the files go back to ") and shown[0].endswith("(before write_file a.txt):")
    rows = {line.split()[1]: line for line in shown[1:] if line.startswith("  ")}
    assert set(rows) == {"a.txt", "main.py", "mynotes.txt", "deep/er/blob.bin"}, shown
    assert rows["mynotes.txt"].split() == ["delete", "mynotes.txt", "-1", "yours"]
    assert rows["main.py"].split() == ["change", "main.py", "+0", "-1", "yours"]
    assert rows["deep/er/blob.bin"].split() == ["delete", "deep/er/blob.bin", "binary", "yours"]
    assert rows["a.txt"].split() == ["delete", "a.txt", "-1"]  # the call's own change: not marked
    assert "3 of these changes are yours" in refused.stderr and "--yes" in refused.stderr
    assert files(ws) == mine  # refused: nothing touched

    asked = Terminal(["undo", "-C", str(ws)], clean_env(loop_home), ws)  # a person at a terminal says no
    try:
        asked.expect(r"undo these changes\? \(3 of these changes are yours\) \[y/N\]: ")
        asked.line("n")
        assert asked.exit_code() == 1
    finally:
        asked.child.close(force=True)
    assert files(ws) == mine

    undone = run_loop("undo", "-C", str(ws), "--yes")
    assert undone.returncode == 0, undone.stderr
    said = undone.stdout.splitlines()[-1]
    assert said.startswith("undone: the files are as they were at ") and "(before write_file a.txt)" in said
    assert "your changes are saved in checkpoint" in said and "before shell" not in undone.stdout
    assert files(ws) == {"main.py": ((b"print(1)\n"), 0o644)}
    screen = [closed_up(line) for line in undone.stdout.splitlines()]
    assert [line for line in readme_undo() if line not in screen] == []  # the README shows what loop prints

    redone = run_loop("redo", "-C", str(ws))  # nothing of the person's is at stake now: no question
    assert redone.returncode == 0, redone.stdout + redone.stderr
    assert files(ws) == mine  # byte for byte, the new files and their permissions too
    assert (ws / "deep" / "er").is_dir()


def test_the_repl_asks_before_undo_discards_the_users_file_and_takes_no_for_an_answer(term, server, workspace):
    server.add(tools(("write_file", {"path": "new.txt", "content": "made\n"})), text("Created new.txt."))
    t = term()
    t.line("create new.txt")
    t.expect("done: completed")
    t.prompt()
    (workspace / "mine.txt").write_text("my own\n")
    before = files(workspace)

    t.line("/undo")
    listed = t.expect(r"undo these changes\? \[y/N\]")
    assert "mine.txt" in listed and "yours" in listed and "new.txt" in listed
    t.line("n")
    assert "nothing undone" in t.expect(TOOLBAR)
    assert files(workspace) == before

    t.line("/undo")
    t.expect(r"undo these changes\? \[y/N\]")
    t.line("y")
    out = t.expect(TOOLBAR)
    assert "undone: " in out and "your changes are saved in checkpoint" in out and "note for the model" in out
    assert sorted(os.listdir(workspace)) == ["a.txt"]

    t.line("/redo")
    assert "redone" in t.expect(TOOLBAR)
    assert files(workspace) == before
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


# ---- in process: what counts as the person's, and what the screen says -------------------------------


class Run:
    """A session's checkpoint step driven as the loop drives it: a snapshot before each call that may
    change files, the call's change, its result (`ToolFinished`)."""

    def __init__(self, home: Path, ws: Path):
        self.ws = ws
        self.timeline = Timeline.open(home, ws)
        self.recorder = Recorder(self.timeline, "s", 2, warn=pytest.fail)
        self.calls = 0

    def call(self, path: str, content: str | None) -> None:
        self.calls += 1
        call = ToolCall(f"c{self.calls}", "write_file", json.dumps({"path": path}))
        self.recorder.before_change(call, path)
        if content is None:
            (self.ws / path).unlink()
        else:
            (self.ws / path).write_text(content)
        self.recorder(ToolFinished(call, ToolResult.ok("ok").answering(call)))

    def plan(self, kind: str = "undo") -> Plan:
        found = preview(self.timeline, kind)
        assert found is not None
        return found


def marked(plan: Plan) -> dict[str, tuple[str, bool]]:
    return {c.path: (c.action, c.yours) for c in plan.changes}


@pytest.fixture
def run(tmp_path: Path) -> Run:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("1\n2\n")
    return Run(tmp_path / "home", ws)


def test_only_what_no_call_made_is_yours_also_between_two_calls(run):
    run.call("a.txt", "agent a\n")
    (run.ws / "between.txt").write_text("typed while the model thought\n")  # a gap between two calls
    run.call("b.txt", "agent b\n")
    (run.ws / "keep.txt").write_text("1\n2\n3\n")  # after the last call
    first = run.plan()
    assert marked(first) == {"keep.txt": ("change", True), "b.txt": ("delete", False)}
    assert first.target.message == "before write_file b.txt"
    run.timeline.undo(first.tree)
    assert (run.ws / "between.txt").exists() and (run.ws / "keep.txt").read_text() == "1\n2\n"
    second = run.plan()  # one further back: the gap's file goes too, and is said to be the person's
    assert marked(second) == {"between.txt": ("delete", True), "a.txt": ("delete", False)}
    assert second.target.message == "before write_file a.txt"


def test_a_file_written_outside_a_call_is_yours(run):
    run.call("a.txt", "agent\n")
    # /init takes its checkpoint through the same step, then writes without a call result after it
    run.recorder.before_change(ToolCall("init", "write_file", "{}"), "AGENTS.md")
    (run.ws / "AGENTS.md").write_text("# rules\n")
    assert marked(run.plan()) == {"AGENTS.md": ("delete", True)}


def test_a_change_made_after_the_list_was_shown_refuses_the_restore(run):
    run.call("a.txt", "agent\n")
    shown = run.plan()
    (run.ws / "late.txt").write_text("typed after the question\n")
    with pytest.raises(CheckpointError, match="changed after the list was shown"):
        run.timeline.undo(shown.tree)
    assert (run.ws / "a.txt").exists() and (run.ws / "late.txt").exists()


def test_changes_made_after_an_undo_are_yours_when_redo_would_replace_them(run):
    run.call("a.txt", "agent\n")
    run.timeline.undo(run.plan().tree)
    (run.ws / "keep.txt").write_text("edited after the undo\n")
    plan = run.plan("redo")
    assert marked(plan) == {"keep.txt": ("change", True), "a.txt": ("create", False)}
    c = run.timeline.redo(plan.tree)
    assert c.kept and "saved in checkpoint " + c.kept[:8] in done_line("redo", c, plan, "")
    assert (run.ws / "a.txt").exists() and (run.ws / "keep.txt").read_text() == "1\n2\n"
    again = run.plan("redo")  # the redo is reversed in turn: the person's edit comes back
    assert marked(again) == {"keep.txt": ("change", False), "a.txt": ("delete", False)}
    run.timeline.redo(again.tree)
    assert (run.ws / "keep.txt").read_text() == "edited after the undo\n" and not (run.ws / "a.txt").exists()


def test_a_files_rewind_marks_the_persons_changes_and_names_the_message_point(run):
    run.call("a.txt", "agent\n")  # the session had 2 messages when this began
    run.recorder.next_index = 6
    run.call("b.txt", "agent\n")
    (run.ws / "mine.txt").write_text("mine\n")
    plan = preview(run.timeline, "rewind", "s", 3)  # back to message 3: before the second call
    assert plan is not None and marked(plan) == {"mine.txt": ("delete", True), "b.txt": ("delete", False)}
    assert preview(run.timeline, "rewind", "s", 7) is None  # no call began after message 7
    c = run.timeline.rewind("s", 3, plan.tree)
    assert c is not None and c.kept and sorted(os.listdir(run.ws)) == ["a.txt", "keep.txt"]


def test_the_list_counts_lines_and_marks_the_persons_changes():
    target = Checkpoint("0123456789abcdef", 0, "before write_file app.py")
    plan = Plan("undo", target, "t", (Change("notes.md", "delete", 0, 3, True), Change("app.py", "change", 2, 1, False),
                                      Change("logo.png", "create", None, None, False)))
    assert plan_lines(plan) == ["undo: the files go back to 01234567 (before write_file app.py):", "  delete  notes.md  -3         yours",
                                "  change  app.py    +2 -1", "  create  logo.png  binary", YOURS]
