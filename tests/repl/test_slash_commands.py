"""Slash commands in a real pty: /undo and /rewind tell the model, /compact and /tokens report once and
in steps, Tab completes a single candidate and the values of /approval and /model, the prompt history
keeps no answers of /rewind, and a resumed session says what it is."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakeserver import text, tools, user_texts
from tests.pty import TOOLBAR


def session_records(loop_home: Path) -> list[dict]:
    files = sorted((loop_home / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return [json.loads(line) for line in files[-1].read_text().splitlines()]


def test_undo_tells_the_model_which_calls_it_undid(term, server, workspace, loop_home):
    server.add(tools(("write_file", {"path": "new.txt", "content": "made\n"})), text("Created new.txt."),
               text("Right, it is gone."))
    t = term()
    t.line("create new.txt")
    t.expect("done: completed")
    assert (workspace / "new.txt").exists()
    t.prompt()
    t.line("/undo")
    out = t.expect(TOOLBAR)
    assert "undone" in out and "note for the model" in out
    assert not (workspace / "new.txt").exists()
    t.line("is new.txt there?")
    t.expect("done: completed")
    notes = [m for m in user_texts(server.requests[-1]) if "undid" in m]
    assert len(notes) == 1
    assert "call 1 (write_file new.txt)" in notes[0] and "before write_file new.txt" in notes[0]
    assert user_texts(server.requests[-1])[-1] == "is new.txt there?"
    saved = [r["content"] for r in session_records(loop_home) if r.get("role") == "user"]
    assert notes[0] in saved  # the session keeps what the model was told
    t.prompt()  # Ctrl+D at the prompt, not in the moment the turn ends
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_rewinding_only_the_files_tells_the_model(term, server, workspace):
    server.add(tools(("write_file", {"path": "a.txt", "content": "one\n"})), text("first"),
               tools(("edit_file", {"path": "a.txt", "old_string": "one", "new_string": "two"})), text("second"),
               text("ok"))
    t = term()
    t.line("write one")
    t.expect("done: completed")
    t.prompt()
    t.line("make it two")
    t.expect("done: completed")
    assert (workspace / "a.txt").read_text() == "two\n"
    t.prompt()
    t.line("/rewind 2")
    t.expect(r"\[c\]onversation")
    t.line("f")
    t.expect("files restored")
    t.prompt()
    assert (workspace / "a.txt").read_text() == "one\n"
    t.child.sendcontrol("u")  # /rewind put the message back into the input line
    t.line("what is in a.txt?")
    t.expect("done: completed")
    note = next(m for m in user_texts(server.requests[-1]) if "undid" in m)
    assert "call 2 (edit_file a.txt)" in note
    t.prompt()  # Ctrl+D at the prompt, not in the moment the turn ends
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_compact_reports_once_and_tokens_counts_steps(term, server):
    long = "word " * 700
    server.add(text(long), text(long), text(long), text("Summary of the work so far."))
    t = term()
    for n in range(3):
        t.line(f"task {n}")
        t.expect("done: completed")
        t.prompt()
    t.line("/compact")
    out = t.expect(TOOLBAR)
    assert out.count("compacted") == 1, out
    t.line("/tokens")
    out = t.expect(TOOLBAR)
    assert "step" in out and "turn" not in out
    # Each task's steps start at 1 again, under a line that names the task.
    assert [line.strip() for line in out.splitlines() if "──" in line] == [
        "── task 1: task 0", "── task 2: task 1", "── task 3: task 2"]
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_tab_completes_a_single_candidate_and_command_values(term, loop_home):
    t = term()
    t.child.send("/appr\t")
    t.child.send(" as\t")
    t.line("")
    assert "approval: ask" in t.expect(TOOLBAR)
    t.child.send("/model def\t")
    t.line("")
    assert "model: default" in t.expect(TOOLBAR)
    t.child.send("/exi\t")
    t.line("")
    assert t.exit_code() == 0
    assert "/approval ask" in (loop_home / "history").read_text()


def test_tab_completes_workspace_paths_after_an_at(term, server, workspace):
    (workspace / "notes.md").write_text("n\n")
    server.add(text("seen"))
    t = term()
    t.child.send("look at @not\t")
    t.line("")
    t.expect("done: completed")
    assert "@notes.md" in user_texts(server.requests[0])[0]
    t.prompt()  # Ctrl+D at the prompt, not in the moment the turn ends
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


def test_rewind_answers_stay_out_of_the_prompt_history(term, server, loop_home):
    server.add(text("one"), text("two"))
    t = term()
    t.line("first question")
    t.expect("done: completed")
    t.prompt()
    t.line("/rewind")
    t.expect(r"rewind to which message\?")
    t.line("1")
    t.expect(r"\[c\]onversation")
    t.line("c")
    t.expect("conversation rewound")
    t.prompt()
    t.child.sendcontrol("u")
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
    entries = [line[1:] for line in (loop_home / "history").read_text().splitlines() if line.startswith("+")]
    assert entries == ["first question", "/rewind"]


def test_resume_shows_the_session_its_task_and_last_exchanges(term, server, run_loop, workspace):
    server.add(text("The answer is 42."))
    done = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "what is the answer?")
    assert done.returncode == 0, done.stderr
    t = term("--resume", "last")
    shown = t.seen
    assert "resumed session" in shown and "last active just now" in shown
    assert "task: what is the answer?" in shown and "The answer is 42." in shown
    t.child.sendcontrol("d")
    assert t.exit_code() == 0


# ---- /sessions and /tokens fit the screen (in-process: the real REPL and renderer, a replayed model) -------

def in_process_repl(tmp_path, monkeypatch, turns: list, width: int, services=None):
    import io
    import os
    import sys

    from loopagent.cli.repl.repl import Repl
    from loopagent.client.replay import ReplayClient
    from loopagent.config import Settings
    from loopagent.loop import Agent
    from loopagent.messages import SystemMessage
    from loopagent.render.terminal import TerminalRenderer
    from loopagent.run.services import Services
    from loopagent.tools import Registry, ToolContext, default_tools
    from loopagent.tools.workspace import Workspace

    devnull = open(os.devnull)  # the REPL's type-ahead needs a real file descriptor on stdin
    monkeypatch.setattr(sys, "stdin", devnull)
    agent = Agent(model=ReplayClient(turns), registry=Registry(default_tools()), tools=ToolContext(Workspace(tmp_path)))
    out = io.StringIO()
    repl = Repl(agent, [SystemMessage("sys")], Settings(ctx_size=16384), TerminalRenderer(out, color=False, width=width),
                services=services or Services())
    return repl, out


def test_tokens_names_each_task_above_its_steps(tmp_path, monkeypatch):
    from loopagent.cli.repl.commands import COMMANDS
    from tests.fakeserver import text_events, tool_events

    (tmp_path / "a.txt").write_text("hello\n")
    long_task = "read a.txt and then tell me, at length and with care, everything that it says " * 2
    repl, out = in_process_repl(tmp_path, monkeypatch, [
        text_events("first"), tool_events(("read_file", {"path": "a.txt"})), text_events("it says hello")], 60)
    repl.turn("say something")
    repl.turn(long_task)
    out.truncate(0)
    out.seek(0)
    COMMANDS["/tokens"].run(repl, "", None)
    shown = out.getvalue().splitlines()
    assert all(len(line) <= 60 for line in shown), shown
    steps = [line.split()[0] for line in shown[1:-1]]
    assert steps == ["──", "1", "──", "1", "2"], shown  # numbers start again per task, each task named
    assert shown[1] == "  ── task 1: say something"
    assert shown[3].startswith("  ── task 2: read a.txt and then tell me") and shown[3].endswith("…")
    assert shown[-1].split()[:3] == ["all", "300", "30"]  # the separators count for nothing


def test_sessions_rows_fit_the_screen_with_the_task_cut_by_an_ellipsis(tmp_path, monkeypatch):
    from loopagent.cli.repl.commands import COMMANDS
    from loopagent.run.record import describe_sessions
    from loopagent.run.services import Services
    from loopagent.session.catalog import Summary

    found = [Summary("20260101T101500Z-fix-the-failing-test-in-the-path-rules", tmp_path / "a.jsonl",
                     "2026-01-01T10:15:00Z", 5, "completed", "fix the failing test in the path rules module " * 2),
             Summary("20260101T111500Z-short", tmp_path / "b.jsonl", "2026-01-01T11:15:00Z", 1, "aborted", "short")]
    for width, dated in ((100, False), (140, True)):
        repl, out = in_process_repl(tmp_path, monkeypatch, [], width,
                                    Services(sessions=lambda width=None: describe_sessions(found, width)))
        COMMANDS["/sessions"].run(repl, "", None)
        shown = out.getvalue().splitlines()
        assert len(shown) == 2 and all(len(line) <= width for line in shown), shown
        assert shown[0].startswith("20260101T101500Z-fix-the-failing-test-in-the-path-rules  ")  # the id whole
        assert shown[0].endswith("…") and "fix the failing test" in shown[0]  # the task cut, not dropped
        assert shown[1].endswith("aborted    short")  # what fits is left whole
        assert ("2026-01-01 10:15:00" in shown[0]) is dated  # the date goes first on a narrow screen


def test_the_resume_recap_fits_a_narrow_screen():
    from loopagent.cli.repl.recap import recap
    from loopagent.messages import AssistantMessage, UserMessage

    long = "explain how the path rules pick files on Windows runners and why backslashes matter " * 3
    history = [UserMessage(long), AssistantMessage(long), UserMessage("and then?"), AssistantMessage("done")]
    shown = recap(history, "20260101T101500Z-explain", None, width=60)
    assert all(len(line) <= 60 for line in shown), shown
    assert shown[1].startswith("task: explain how") and shown[1].endswith("…")
