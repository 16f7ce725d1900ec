"""What the screen says, through the real `loop`: plain output in a subprocess, colour output on a pty."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from pathlib import Path

import pexpect
import pytest

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import Reply, text, text_events, tools
from tests.pty import ANSI, Terminal
from tests.screen import Screen


def sse(*deltas: dict, finish: str = "stop") -> list:
    """A stream whose chunks carry exactly these deltas (to split a tag where a test wants it)."""
    chunk = {"id": "x", "object": "chat.completion.chunk", "model": "fake"}
    events = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    events.append({**chunk, "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
    return events


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.txt").write_text("only line\n")
    return root


def pty_env(loop_home: Path, **extra: str) -> dict[str, str]:
    env = clean_env(loop_home)
    env.pop("NO_COLOR", None)
    env.update({"TERM": "xterm", **extra})
    return env


def one_shot(server, ws: Path, loop_home: Path, task: str, *flags: str, size=(40, 120), **env: str) -> Terminal:
    args = ["agent", "-C", str(ws), "--base-url", server.url, *flags, task]
    return Terminal(args, pty_env(loop_home, **env), ws, dimensions=size)


def finish(t: Terminal) -> str:
    """Everything the terminal got until the process ended (escape codes kept)."""
    t.child.expect(pexpect.EOF, timeout=30)
    t.seen += t.child.before
    t.child.close()
    return t.seen


# ---- shell results -----------------------------------------------------------------------------

def test_a_shell_result_shows_exit_status_line_count_and_first_lines(run_loop, server, ws):
    server.add(tools(("shell", {"command": "seq 1 400"})), tools(("shell", {"command": "ls"})), text("Done."))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--approval", "all", *where_shells_run(),
                    "count")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "[1] shell seq 1 400\n    ok: exit 0, 400 lines\n      1\n      2\n      3\n      4\n      … +396 lines\n" in out
    assert "[2] shell ls\n    ok: exit 0, 1 line\n      one.txt\n" in out
    assert "done: completed, 3 steps," in out


def test_counts_are_singular_for_one(run_loop, server, ws):
    server.add(tools(("read_file", {"path": "one.txt"})), text("Read."))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "read it")
    assert "    ok: 1 line\n" in proc.stdout
    server.add(text("Hi."))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--no-checkpoints", "hi")
    assert "done: completed, 1 step, 100+10 tokens, 0 checkpoints\n" in proc.stdout


# ---- thinking ----------------------------------------------------------------------------------

def test_reasoning_then_text_shows_one_thinking_line(run_loop, server, ws):
    server.add(Reply(events=sse({"reasoning_content": "Weigh the "}, {"reasoning_content": "options."},
                                {"content": "The answer."})))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "q")
    assert proc.stdout.count("thinking:") == 1, proc.stdout
    assert "thinking: Weigh the options.\nThe answer.\n" in proc.stdout


def test_inline_think_blocks_are_thinking_in_plain_output(run_loop, server, ws):
    # The tag split across deltas, then a second turn whose think block never closes.
    server.add(Reply(events=sse({"content": "<th"}, {"content": "ink>plan"}, {"content": " it</thi"},
                                {"content": "nk>\n\nThe answer."})))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "q")
    assert "thinking: plan it\nThe answer.\n" in proc.stdout, proc.stdout
    assert "think>" not in proc.stdout
    server.add(Reply(events=sse({"content": "<think>still going"})))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "q")
    assert "thinking: still going\n" in proc.stdout and "think>" not in proc.stdout


def test_inline_think_blocks_do_not_run_into_the_answer_in_colour(server, ws, loop_home):
    server.add(Reply(events=sse({"content": "<think>plan"}, {"content": " it</think>"},
                                {"content": "The **answer**."})))
    t = one_shot(server, ws, loop_home, "q")
    out = ANSI.sub("", finish(t))
    assert t.child.exitstatus == 0
    assert "think>" not in out
    assert re.search(r"thinking: plan it\s*\r?\n\s*The answer\.", out), out


# ---- NO_COLOR and TERM=dumb ----------------------------------------------------------------------

ANSWER = "Use **bold** and `code`.\n\n```python\nx = 1\n```\n"


def test_no_color_renders_markdown_and_times_without_colour(server, ws, loop_home):
    server.add(text(ANSWER))
    t = one_shot(server, ws, loop_home, "q", NO_COLOR="1")
    raw = finish(t)
    assert t.child.exitstatus == 0
    plain = ANSI.sub("", raw)
    assert "**" not in plain and "```" not in plain and "Use bold and code." in plain
    assert not [code for code in ANSI.findall(raw) if code.endswith("m")]  # no colour (no SGR code at all)
    assert re.search(r"waiting for the model \d+s", plain)  # the live area with its elapsed time


def test_a_dumb_terminal_gets_plain_text_without_escapes(server, ws, loop_home):
    server.add(text(ANSWER))
    t = one_shot(server, ws, loop_home, "q", TERM="dumb")
    raw = finish(t)
    assert t.child.exitstatus == 0
    assert "\x1b" not in raw
    assert "Use **bold** and `code`." in raw and "```python" in raw


# (diffs at a narrow width: tests/render/test_diff_wrap.py)


# ---- the loop-detection note ---------------------------------------------------------------------------

def test_the_loop_note_speaks_of_the_model_and_the_model_keeps_its_nudge(run_loop, server, ws):
    call = ("read_file", {"path": "one.txt"})
    server.add(*[tools(call) for _ in range(3)], text("Stopping."))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "read")
    assert "loop: the model ran read_file three times in a row with the same arguments and result; " \
           "it was told to change approach" in proc.stdout
    assert "you have" not in proc.stdout
    sent = json.dumps(server.requests[-1]["messages"][-1])
    assert "[loop: you have run this three times with the same result; change approach]" in sent


# ---- resizing while the answer streams ---------------------------------------------------------------------

OPEN = "Second paragraph streams on and on past fifty columns so that a narrower terminal wraps it "


def test_a_resize_mid_stream_leaves_no_fragments(server, ws, loop_home):
    gate = threading.Event()

    def stream():
        head = text_events("First paragraph, finished.\n\n" + OPEN, finish=None, usage=None)
        yield "".join(f"data: {json.dumps(e)}\n\n" for e in head).encode()
        gate.wait(20)
        tail = text_events("and ends here.\n", usage=(100, 10))[1:]
        yield ("".join(f"data: {json.dumps(e)}\n\n" for e in tail) + "data: [DONE]\n\n").encode()

    server.add(Reply(stream=stream))
    # COLUMNS as a shell may export it: the renderer must follow the terminal, not a stale variable.
    # --ctx-size given: no note about a context size the fake server does not report on the screen.
    t = one_shot(server, ws, loop_home, "q", "--ctx-size", "16384", size=(30, 120), COLUMNS="120", LINES="30")
    try:
        t.child.expect("on and on", timeout=20)
        before = t.child.before + t.child.after
        # Stop the child so that every byte it wrote at the old width is read before the resize.
        os.kill(t.child.pid, signal.SIGSTOP)
        try:
            while True:
                before += t.child.read_nonblocking(65536, timeout=0.2)
        except pexpect.TIMEOUT:
            pass
        t.child.setwinsize(30, 50)
        os.kill(t.child.pid, signal.SIGCONT)
        gate.set()
        t.child.expect(pexpect.EOF, timeout=30)
        after = t.child.before
    finally:
        gate.set()
        t.child.close(force=True)
    screen = Screen(120)
    screen.feed(before)
    screen.resize(50)
    screen.feed(after)
    lines = [ln for ln in screen.lines() if ln.strip()]
    # Printed at the new width (Rich wraps the blocks it prints); each piece of text once, nothing else.
    assert all(len(ln) <= 50 for ln in lines), lines
    # The done line fits the new width too: the checkpoint count went, the rest is one line.
    assert " ".join(lines).split() == (f"First paragraph, finished. {OPEN}and ends here. "
                                       "done: completed, 1 step, 100+10 tokens").split(), lines
    assert lines[-1] == "done: completed, 1 step, 100+10 tokens"


# ---- the done line in the REPL -----------------------------------------------------------------------------

def test_the_done_line_says_which_figures_are_the_tasks_and_which_all_tasks(server, ws, loop_home):
    from tests.pty import terminals

    server.add(text("Hi."), tools(("write_file", {"path": "b.txt", "content": "b\n"})), text("Wrote it."))
    for start in terminals(server, ws, loop_home):
        t = start("--approval", "all", wait_prompt=True)
        t.line("hello")
        t.expect(r"done: completed, 1 step, 100\+10 tokens, 0 checkpoints\r?\n")
        t.prompt()
        t.line("write b")
        t.expect(r"done: [^\r\n]*checkpoints?")
        assert ANSI.sub("", t.child.after) == ("done: completed · this task: 2 steps, 200+20 tokens, 1 checkpoint · "
                                               "all tasks: 3 steps, 300+30 tokens, 1 checkpoint")
        t.prompt()
        t.child.sendcontrol("d")
        assert t.exit_code() == 0
