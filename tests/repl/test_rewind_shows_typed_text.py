"""Review of the REPL: a message sent after `!cmd` and with `@path` is stored with loop's additions
(the command's note before it, the attachment after it); the session's name, `loop sessions` and
/rewind show only what the person typed, and the rewound message sent again carries its attachment
once, not the old blocks plus a fresh one."""

from __future__ import annotations

from loopagent.cli.repl.bang import context_note
from loopagent.cli.repl.recap import recap
from loopagent.messages import AssistantMessage, UserMessage
from loopagent.session.typed import typed
from tests.fakeserver import text, user_texts


def test_typed_recovers_the_words_from_notes_and_attachments():
    note = context_note("cat notes.txt", "exit code 0", "a\n\n[attached @x, as read_file shows it]\n\nb")
    content = "\n\n".join([note, note, "fix it\n\nplease\n\n[attached @a.txt, as read_file shows it]\n     1\thi"])
    assert typed(content) == "fix it\n\nplease"
    assert typed("plain words") == "plain words"
    shown = recap([UserMessage(content), AssistantMessage("done")], "s1", None)  # what --resume shows
    assert shown[1:] == ["task: fix it", "  > fix it", "    done"]
    assert typed("[the user ran a command in the workspace]\n$ ls\nexit code 0\nno end").startswith("[the user")


def test_rewind_and_names_show_what_was_typed(terminal, server, workspace, loop_home, run_loop):
    server.add(text("First."), text("Again."))
    t = terminal(wait_prompt=True)
    t.line("!echo from-bang")
    t.expect("go with your next message")
    t.prompt()
    t.line("fix the bug in @a.txt")
    t.expect("First.")
    t.prompt()
    first = user_texts(server.requests[0])[-1]
    assert first.startswith("[the user ran a command in the workspace]\n$ echo from-bang\nexit code 0\nfrom-bang")
    assert first.count("[attached @a.txt") == 1
    [session] = (loop_home / "sessions").glob("*/*.jsonl")
    assert session.stem.endswith("-fix-the-bug-in-a-txt"), session.stem

    t.line("/rewind")
    listed = t.expect(r"\(number, Enter cancels\)")
    assert "1. fix the bug in @a.txt" in listed
    t.line("1")
    t.expect(r"\[c\]onversation")
    t.line("c")
    t.expect("conversation rewound")
    t.prompt()
    t.line("")  # the prefilled message, as typed
    t.expect("Again.")
    t.prompt()
    again = user_texts(server.requests[1])[-1]
    assert again == "fix the bug in @a.txt\n\n[attached @a.txt, as read_file shows it]\n     1\thello", again
    t.child.sendcontrol("d")
    assert t.exit_code() == 0

    listing = run_loop("sessions", "-C", str(workspace))
    assert listing.returncode == 0, listing.stderr
    assert "[the user ran" not in listing.stdout and "fix the bug in @a.txt" in listing.stdout
