"""Leaving the REPL takes a deliberate key (a real pty): one Ctrl+C at the prompt only says how to
leave, two back to back leave (exit 0), so does Ctrl+D on an empty line; a Ctrl+C that stops a turn,
or lands as one ends, never leaves. The last line names the session and the command that resumes it.

The two seconds are a window, not a wait: the presses are sent back to back and the test waits for
what the screen says."""

from __future__ import annotations

import re
from pathlib import Path

from loopagent.cli.repl.recap import resume_command
from loopagent.cli.repl.repl import HINT
from tests.fakeserver import Reply, text, text_events

RESUME = re.compile(r"session (\S+) saved; resume with: loop agent (-C \S+ )?--resume (\S+)")


def saved_ids(loop_home: Path) -> list[str]:
    return [p.stem for p in (loop_home / "sessions").rglob("*.jsonl")]


def resume_line(t) -> re.Match:
    t.child.expect(r"--resume \S+\r?\n")
    found = RESUME.search(t.seen + t.child.before + t.child.after)
    assert found, t.child.before
    return found


def test_one_ctrl_c_says_how_to_leave_and_the_repl_goes_on(term, server, loop_home):
    server.add(text("First answer."), text("Second answer."))
    t = term()
    t.line("first task")
    t.expect("done: completed")
    t.prompt()
    t.child.sendintr()
    t.expect(re.escape(HINT))
    t.line("second task")  # still running: the next task is sent and answered
    t.expect("Second answer.")
    t.expect("done: completed")
    assert len(server.requests) == 2
    t.prompt()
    t.child.sendcontrol("d")  # Ctrl+D on an empty line leaves at once, without the hint
    found = resume_line(t)
    assert t.exit_code() == 0
    assert found.group(1) == found.group(3) and saved_ids(loop_home) == [found.group(1)]
    assert found.group(2) is None  # started in the workspace: no -C needed
    assert t.seen.count(HINT) == 1


def test_two_ctrl_c_back_to_back_leave_with_0_and_name_the_session(term, server, loop_home):
    server.add(text("Answer."))
    t = term()
    t.line("a task")
    t.expect("done: completed")
    t.prompt()
    t.child.send("\x03\x03")  # back to back: well within the window
    found = resume_line(t)
    assert t.exit_code() == 0
    assert saved_ids(loop_home) == [found.group(1)]


def test_the_ctrl_c_that_stops_a_turn_or_lands_as_it_ends_never_leaves(term, server):
    server.add(Reply(events=text_events("Once upon a time " * 200), split=60, delay=0.1), text("Short."),
               text("Still here."))
    t = term()
    t.line("tell a long story")
    t.expect("Once upon a time Once")
    t.child.sendintr()  # stops the turn
    t.expect("done: aborted")
    t.prompt()
    t.child.sendintr()  # the first at the prompt: only the hint, although a Ctrl+C came moments ago
    t.expect(re.escape(HINT))
    t.line("short one")
    t.expect("done: completed")
    t.child.sendintr()  # as the turn ends (before or after the prompt is back): the hint, not an exit
    t.expect(re.escape(HINT))
    t.line("still there?")
    t.expect("Still here.")
    assert len(server.requests) == 3


def test_the_resume_command_names_the_workspace_unless_it_is_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resume_command("20260101T000000Z-x", tmp_path) == "loop agent --resume 20260101T000000Z-x"
    other = tmp_path / "my project"
    other.mkdir()
    assert resume_command("s1", other) == f"loop agent -C '{other}' --resume s1"


def test_ctrl_d_in_a_session_where_nothing_was_said_leaves_nothing_to_resume(term, loop_home):
    t = term()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
    assert "resume with" not in t.seen + (t.child.before or "")
    assert saved_ids(loop_home) == []



def test_a_sigint_between_prompts_is_counted_not_raised():
    """What makes a Ctrl+C that lands as a turn ends safe: once the REPL holds SIGINT, it no longer
    raises wherever the main thread is (restoring the terminal, writing the session)."""
    import os
    import signal

    from loopagent.run.interrupts import Trap
    from tests.conftest import wait_for

    with Trap() as trap:
        trap.hold()
        os.kill(os.getpid(), signal.SIGINT)
        wait_for(lambda: bool(trap.held), timeout=5)
        assert trap.take_held() == 1 and trap.take_held() == 0
        with trap.turn() as cancel:  # inside a turn it still cancels the turn
            os.kill(os.getpid(), signal.SIGINT)
            wait_for(cancel.is_set, timeout=5)
        assert trap.take_held() == 0
