"""The renderer's parts on their own: counts, inline think blocks, shell heads, diff rows, the done line,
the live area's erase after a resize, and a stderr note that steps around the live area."""

from __future__ import annotations

import io

import pytest

from loopagent.counts import counted
from loopagent.details import Details
from loopagent.events import AgentStart, AssistantDone, Notice, RunEnd, TextDelta, ThinkingDelta, TurnStart
from loopagent.messages import AssistantMessage, ToolResult, Usage
from loopagent.render import diff as diffs
from loopagent.render.lines import Tally, done_line, text_of
from loopagent.render.live import LiveArea, rows_after_resize
from loopagent.render.notes import StderrNotes
from loopagent.render.results import shown
from loopagent.render.sink import RichSink
from loopagent.render.terminal import TerminalRenderer
from loopagent.thinking import ThinkSplitter, merge
from tests.screen import Screen


def test_counts_are_singular_for_one():
    assert counted(1, "step") == "1 step"
    assert counted(2, "step") == "2 steps"
    assert counted(0, "line") == "0 lines"
    assert counted(1, "match") == "1 match" and counted(3, "match") == "3 matches"


def split(chunks: list[str]) -> list[tuple[str, str]]:
    s = ThinkSplitter()
    out = []
    for chunk in chunks:
        out += s.feed(chunk)
    return merge(out + s.finish())


@pytest.mark.parametrize("chunks", [
    ["<think>plan it</think>\n\nThe answer."],
    ["<", "thi", "nk>pl", "an it</", "think", ">", "\n", "\nThe answer."],
    ["  <think>plan it</think>The answer."],
])
def test_inline_think_blocks_become_thinking_wherever_the_deltas_split(chunks):
    assert split(chunks) == [("thinking", "plan it"), ("text", "The answer.")]


def test_a_think_tag_inside_a_sentence_is_text_and_an_unclosed_block_is_thinking():
    assert split(["Use a <think> tag."]) == [("text", "Use a <think> tag.")]
    assert split(["Intro\n<think>still", " going"]) == [("text", "Intro\n"), ("thinking", "still going")]
    assert split(["<thi"]) == [("text", "<thi")]  # a tag that never completed is text


def test_text_waits_only_while_a_tag_may_be_arriving():
    s = ThinkSplitter()
    assert s.feed("Hello there") == [("text", "Hello there")]  # no tag possible: shown at once
    assert s.feed("\n<th") == [("text", "\n")]
    assert s.feed("ank you") == [("text", "<thank you")]


def test_a_shell_head_takes_the_first_lines_and_counts_the_rest():
    out = "\n".join(str(i) for i in range(1, 401)) + "\n\n[loop: you have run this three times]"
    result = ToolResult("c", "shell", "exit code 0\n" + out, details=Details("ok", exit_code=0, lines=400))
    s = shown(result)
    assert (s.rest, s.head, s.more) == ("exit 0, 400 lines", ("1", "2", "3", "4"), 396)
    five = ToolResult("c", "shell", "exit code 1\na\nb\nc\nd\ne\n\n[loop: note]", is_error=True,
                      details=Details("error", exit_code=1, lines=5))
    s = shown(five)
    assert (s.word, s.rest, s.head, s.more) == ("error", "exit 1, 5 lines", ("a", "b", "c", "d", "e"), 0)


def test_long_head_lines_are_clipped_to_the_width():
    result = ToolResult("c", "shell", "exit code 0\n" + "x" * 200, details=Details("ok", exit_code=0, lines=1))
    out = io.StringIO()
    r = TerminalRenderer(out, color=False, width=40)
    from loopagent.events import ToolCalled, ToolFinished
    from loopagent.messages import ToolCall

    call = ToolCall("c", "shell", "{}")
    r(ToolCalled(call, "cat big"))
    r(ToolFinished(call, result))
    assert out.getvalue().splitlines()[2] == "      " + "x" * 33 + "…"


def test_wrapped_diff_rows_continue_under_their_text_without_a_marker():
    diff = "@@ -1 +1 @@\n-" + "a" * 50 + "\n+" + "b" * 50 + "\n context\n"
    rows = [text for text, _ in diffs.rows(diff, "  ", width=30)]
    assert rows[0] == "  @@ -1 +1 @@"
    assert all(len(row) <= 30 for row in rows)
    assert [row[2] for row in rows[1:]] == ["-", " ", "+", " ", " "]  # the counts say +1 -1: so do the rows
    assert rows[3][3:] + rows[4][3:] == "b" * 50
    assert diffs.plain(diff, "  ").count("\n") == 4  # no width (a file): lines stay whole


def test_the_done_line_names_what_its_figures_count():
    one = Tally(steps=1, prompt=100, completion=10, checkpoints=1)
    assert text_of(done_line("completed", "", one, None)) == "done: completed, 1 step, 100+10 tokens, 1 checkpoint"
    both = text_of(done_line("completed", "", one, Tally(3, 300, 30, 2)))
    assert both == ("done: completed · this task: 1 step, 100+10 tokens, 1 checkpoint · "
                    "all tasks: 3 steps, 300+30 tokens, 2 checkpoints")


def test_checkpoints_on_the_done_line_are_the_tasks_own():
    out = io.StringIO()
    r = TerminalRenderer(out, color=False)
    for n in (1, 2):
        r(AgentStart("t"))
        r(Notice("checkpoint", "abc"))
        r(RunEnd("completed", n, Usage(100 * n, 10 * n)))
    assert out.getvalue().splitlines() == [
        "done: completed, 1 step, 100+10 tokens, 1 checkpoint",
        "done: completed · this task: 2 steps, 200+20 tokens, 1 checkpoint · all tasks: 3 steps, 300+30 tokens, "
        "2 checkpoints",
    ]


@pytest.mark.parametrize("color", [False, True], ids=["plain", "colour"])
def test_thinking_is_summarised_once_when_text_follows(color):
    out = io.StringIO()
    r = TerminalRenderer(out, color=color, live=False, width=80)
    for event in [TurnStart(1), ThinkingDelta("Weigh it."), TextDelta("Answer."),
                  AssistantDone(AssistantMessage("Answer.", thinking="Weigh it."))]:
        r(event)
    assert out.getvalue().count("thinking:") == 1


def test_a_resize_counts_the_rows_the_terminal_rewrapped():
    assert rows_after_resize([100, 10], 120) == 2
    assert rows_after_resize([100, 10], 50) == 3
    assert rows_after_resize([0], 50) == 1


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_stderr_note_during_the_live_area_lands_above_it():
    out = Tty()
    sink = RichSink(out, width=60)
    sink.set_activity("waiting for the model")  # starts the live area
    try:
        StderrNotes(err=out).line("cannot reach the server; retrying (2/5) in 0.5 s")
    finally:
        sink.pause()
    screen = Screen(60)
    screen.feed(out.getvalue().replace("\n", "\r\n"))
    assert screen.lines() == ["cannot reach the server; retrying (2/5) in 0.5 s"]


def test_the_live_area_redraws_in_place():
    out = Tty()
    area = LiveArea(RichSink(out, width=60).console, out, lambda: "row one\nrow two")
    area.start()
    area.refresh()
    with area.printing():
        out.write("printed\n")
    area.stop()
    screen = Screen(60)
    screen.feed(out.getvalue().replace("\n", "\r\n"))
    assert screen.lines() == ["printed"]
