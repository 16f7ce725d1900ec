"""Long diff lines soft-wrap: the row that continues a line has no `+`/`-` of its own, so the rows
agree with the `+N -M` counts at any width (results, approval prompts, /diff and /init alike). The
`done:` line fits the width by dropping its least telling parts."""

from __future__ import annotations

import io

import pexpect
import pytest

from loopagent.events import ToolCalled, ToolFinished
from loopagent.messages import ToolCall, ToolResult
from loopagent.render import diff as diffs
from loopagent.render.lines import Tally, done_line, text_of
from loopagent.render.terminal import TerminalRenderer
from tests.conftest import clean_env
from tests.fakeserver import text, tools
from tests.pty import Terminal
from tests.screen import Screen

ADDED = ("x = [" + ", ".join(f"'item{i:03}'" for i in range(20)))[:199] + "]"  # 200 characters, one line
REMOVED = "old = compute(alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota, kappa, lambda_, mu, nu)"
DIFF = (f"--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n keep = 1\n-{REMOVED}\n+{ADDED}\n"
        f" also = 'a context line long enough to wrap at the narrow widths tested here, surely'\n")


def test_the_added_line_is_200_characters():
    assert len(ADDED) == 200


def markers(rows: list[str], indent: str) -> list[str]:
    """The marker column of each diff row ('+', '-', ' ' ...), the hunk header left out."""
    return [row[len(indent)] for row in rows if not row[len(indent):].startswith("@@")]


@pytest.mark.parametrize("width", [30, 50, 80, 120, 250])
def test_rows_fit_the_width_and_agree_with_the_counts(width):
    indent = "      "
    rows = [t for t, _ in diffs.rows(DIFF, indent, width=width)]
    assert all(len(row) <= width for row in rows), rows
    marks = markers(rows, indent)
    assert (marks.count("+"), marks.count("-")) == diffs.stats(DIFF) == (1, 1)
    # A changed line reads back whole: its first row, then the rows in its colour that continue it.
    lines: list[tuple[str, str]] = []
    for row, style in diffs.rows(DIFF, indent, width=width):
        body = row[len(indent):]
        if lines and body.startswith(" ") and style in ("green", "red") and style == lines[-1][1]:
            lines[-1] = (lines[-1][0] + body[1:], style)  # a continuation: under the text, no marker
        else:
            lines.append((body, style))
    assert ("+" + ADDED, "green") in lines and ("-" + REMOVED, "red") in lines
    if width < 200:  # the added line took several rows and only its first carries the `+`
        first = next(i for i, row in enumerate(rows) if row[len(indent)] == "+")
        assert rows[first + 1].startswith(indent + " ") and rows[first + 1][len(indent) + 1:] != ""


def test_without_a_width_a_file_keeps_every_line_whole():
    assert diffs.plain(DIFF, "  ", headers=True).splitlines()[4] == "  -" + REMOVED


def screen_of(out: io.StringIO, width: int) -> Screen:
    screen = Screen(width)
    screen.feed(out.getvalue().replace("\n", "\r\n"))  # what a pty's output processing (onlcr) sends
    return screen


@pytest.mark.parametrize("color", [False, True], ids=["plain", "colour"])
@pytest.mark.parametrize("width", [60, 80])
def test_result_approval_and_whole_diffs_on_a_screen(color, width):
    out = io.StringIO()
    r = TerminalRenderer(out, color=color, live=False, width=width, monochrome=True)
    call = ToolCall("c1", "edit_file", "{}")
    r.show_approval(call, "m.py", DIFF, "edits need approval")  # the approval prompt
    r.show_diff(DIFF, "m.py +1 -1")  # /diff and /init
    other = ToolCall("c2", "edit_file", "{}")
    r(ToolCalled(other, "m.py"))
    r(ToolFinished(other, ToolResult("c2", "edit_file", "edited m.py", display=DIFF)))  # the result
    screen = screen_of(out, width)
    assert not any(screen.wrapped), "a row ran past the width and the terminal wrapped it"
    rows = ["".join(cells) for cells in screen.rows]
    plus = [row for row in rows if row.lstrip().startswith("+") and not row.lstrip().startswith("+++")]
    minus = [row for row in rows if row.lstrip().startswith("-") and not row.lstrip().startswith("---")]
    assert len(plus) == 3 and len(minus) == 3, rows  # one each, in each of the three diffs
    assert "would change m.py  +1 -1" in out.getvalue()


def changed_lines(rows: list[str], indent: int) -> tuple[list[str], list[str]]:
    """The added and removed lines of a diff on screen: a `+`/`-` row and the rows that continue it
    (blank in the marker's column), joined."""
    added: list[str] = []
    removed: list[str] = []
    current: list[str] | None = None
    for row in rows:
        mark, body = row[indent:indent + 1], row[indent + 1:]
        if row[indent:].startswith(("+++ ", "--- ")):  # a file header, not a changed line
            current = None
        elif mark in ("+", "-"):
            current = added if mark == "+" else removed
            current.append(body)
        elif mark == " " and current is not None and row.startswith(" " * (indent + 1)) and body.strip():
            current[-1] += body
        else:
            current = None
    return added, removed


def test_a_200_character_line_on_an_80_column_pty(server, workspace, loop_home):
    """The real REPL on a pty 80 columns wide: the approval prompt, a result and /diff each show the
    200-character line as one `+` row continued under its text; the terminal never wraps a diff row."""
    (workspace / "m.py").write_text(f"keep = 1\n{REMOVED}\n")
    again = ADDED.replace("item", "elem")
    server.add(tools(("write_file", {"path": "m.py", "content": f"keep = 1\n{ADDED}\n"})), text("Done."),
               tools(("write_file", {"path": "m.py", "content": f"keep = 1\n{again}\n"})), text("Again."))
    env = clean_env(loop_home)
    env.update(TERM="xterm", COLUMNS="80", LINES="40")
    t = Terminal(["agent", "-C", str(workspace), "--base-url", server.url, "--approval", "ask"], env, workspace,
                 dimensions=(40, 80))
    try:
        t.prompt()
        t.line("edit m.py")
        t.expect(r"allow\? \[y/N/a\]")
        t.line("y")
        t.expect("done: completed")
        t.prompt()
        t.line("/approval all")
        t.prompt()
        t.line("edit it again")
        t.expect("done: completed")
        t.prompt()
        t.line("/diff")
        t.prompt()
        t.child.sendcontrol("d")
        t.child.expect(pexpect.EOF, timeout=30)
        seen = t.seen + t.child.before
    finally:
        t.child.close(force=True)
    screen = Screen(80)
    screen.feed(seen)
    rows = ["".join(cells).rstrip() for cells in screen.rows]

    def section(first: str, last: str, after: int = 0) -> tuple[int, list[str]]:
        begin = next(i for i, row in enumerate(rows) if i >= after and first in row)
        stop = next(i for i, row in enumerate(rows) if i > begin and last in row)
        assert not any(screen.wrapped[begin:stop]), "the terminal wrapped a diff row"
        return stop, rows[begin + 1:stop]

    end, asked = section("write_file would change m.py  +1 -1", "allow? [y/N/a]")
    assert changed_lines(asked, 6) == ([ADDED], [REMOVED]), asked
    end, result = section("ok: wrote m.py", "done: completed", end)
    assert changed_lines(result, 0) == ([], [])  # the diff just approved is not shown again
    end, result = section("ok: wrote m.py", "done: completed", end)
    assert changed_lines(result, 6) == ([again], [ADDED]), result
    _, whole = section("> /diff", "session ")  # since the session started; the resume line follows
    assert changed_lines(whole, 2) == ([again], [REMOVED]), whole


TASK = Tally(steps=4, prompt=12345, completion=678, checkpoints=2, cost=0.0123)
ALL = Tally(steps=9, prompt=45678, completion=1234, checkpoints=5, cost=0.0456)


@pytest.mark.parametrize("width", [40, 60, 80, 100, 120, 200])
def test_the_done_line_fits_the_width_dropping_the_least_telling_parts_first(width):
    shown = text_of(done_line("completed", "", TASK, ALL, width))
    assert len(shown) <= width, shown
    full = text_of(done_line("completed", "", TASK, ALL))
    if len(full) <= width:
        assert shown == full  # nothing dropped where all of it fits
    assert shown.startswith("done: completed")
    # What stays is a prefix of this order of importance: the steps, the tokens, the cost, the checkpoints.
    kept = [part in shown for part in ("4 steps", "12345+678 tokens", "$0.01", "2 checkpoints")]
    assert kept == sorted(kept, reverse=True), shown
    assert "all tasks" not in shown or "4 steps" in shown


def test_the_reason_of_a_stop_stays_when_the_figures_go():
    why = "stopped after 30 model requests (--max-steps)"
    shown = text_of(done_line("step_limit", why, TASK, ALL, 75))
    assert shown == f"done: step_limit, 4 steps ({why})"
    assert why in text_of(done_line("step_limit", why, TASK, ALL, 20))  # wraps rather than lose the reason


def test_a_file_gets_the_whole_done_line():
    out = io.StringIO()  # not a terminal: no width to fit
    r = TerminalRenderer(out, color=False)
    from loopagent.events import AgentStart, RunEnd
    from loopagent.messages import Usage

    for n in (1, 2):
        r(AgentStart("t"))
        r(RunEnd("completed", n, Usage(100000 * n, 10 * n)))
    assert out.getvalue().splitlines()[-1] == ("done: completed · this task: 2 steps, 200000+20 tokens, 0 checkpoints"
                                               " · all tasks: 3 steps, 300000+30 tokens, 0 checkpoints")
