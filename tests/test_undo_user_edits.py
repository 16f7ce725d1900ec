"""Undo never eats the user's work: what a restore would discard that no call made (the person's edits
and new files, files loop wrote outside a call) is listed as theirs and asked about; headless it is
refused without --yes; a confirmed undo saves it first, so redo returns it byte for byte; the message
names the call the restored state was taken before.

End to end: the real `loop` against the fake server, real files and git, the REPL on a real pty."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import text, tools
from tests.pty import TOOLBAR


def files(ws: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `ws`: its bytes and permission bits."""
    return {str(p.relative_to(ws)): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(ws.rglob("*")) if p.is_file()}


def test_undo_lists_the_users_changes_refuses_headless_and_redo_returns_them(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.py").write_text("print(1)\n")
    # `ls` changes nothing, so the write that follows makes no checkpoint of its own: the one restored
    # was taken before `ls` too, but it is the write the undo takes back, and the write it must name.
    server.add(tools(("shell", {"command": "ls"})), tools(("write_file", {"path": "a.txt", "content": "agent\n"})),
               text("done"))
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

    undone = run_loop("undo", "-C", str(ws), "--yes")
    assert undone.returncode == 0, undone.stderr
    said = undone.stdout.splitlines()[-1]
    assert said.startswith("undone: the files are as they were at ") and "(before write_file a.txt)" in said
    assert "your changes are saved in checkpoint" in said and "before shell" not in undone.stdout
    assert files(ws) == {"main.py": ((b"print(1)\n"), 0o644)}

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
