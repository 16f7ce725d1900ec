"""No untrusted string takes over the terminal: escape sequences and bidi characters from the model,
tool output and file names reach the screen as visible escapes, in plain and colour mode alike.

Each attack runs through the real `loop` entry point against the fake server; the assertions are on
the raw bytes loop wrote (plain: a pipe; colour: a pty with TERM=xterm-256color).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.messages import ToolCall
from loopagent.policy import Decision
from loopagent.render.safe import printable
from loopagent.render.terminal import TerminalRenderer
from loopagent.run.approve import PromptApprover
from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import Reply, _chunk, text, tool_events, tools
from tests.pty import ANSI, Terminal

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # sets the clipboard to "pwned"
TITLE = "\x1b]0;pwned\x07"  # sets the window title
BIDI = "\u202etxt.exe"  # shows as "exe.txt"
C1_CSI = "\x9b2J"  # C1 CSI: clears the screen on terminals that honour 8-bit controls
ERASE = "touch pwned.txt # \x1b[2K\x1b[1G      $ ls -la"  # redraws the approval line as `$ ls -la`
EVIL_NAME = f"evil{TITLE}.txt"
# Byte sequences of the attacks that must never reach the terminal as they are.
RAW = [OSC52, TITLE, "\x1b]", "\u202e", "\x9b", "\x1b[2K\x1b[1G      $ ls", "\x07"]


def thinking_reply(thought: str, answer: str) -> Reply:
    events = [_chunk({"role": "assistant", "content": ""}), _chunk({"reasoning_content": thought}),
              _chunk({"content": answer}), _chunk({}, "stop")]
    return Reply(events=events)


def attack_script(server, ws: Path) -> None:
    """A run that sends every kind of untrusted text: thinking, tool names, output, file names, diffs, answer."""
    (ws / EVIL_NAME).write_text(f"first line {OSC52}\n")
    server.add(
        Reply(events=tool_events([
            ("list_files", {}),
            ("read_file", {"path": EVIL_NAME}),
            ("shell", {"command": r"printf 'out \033]52;c;cHduZWQ=\007 \342\200\256txt.exe \302\2332J\n'"}),
            (f"no_such{TITLE}", {}),
            ("write_file", {"path": "notes.txt", "content": f"note {TITLE} {BIDI}\n"}),
        ], text=f"Looking {TITLE}")),
        thinking_reply(f"thought {TITLE}", f"Done {OSC52} {BIDI} {C1_CSI} \x1b[31mred\x1b[0m\rcover\n"),
    )


def assert_no_raw_attack(out: str) -> None:
    for seq in RAW:
        assert seq not in out, f"{seq!r} reached the terminal"


def test_plain_output_to_a_pipe_shows_every_attack_escaped(server, sample, loop_home):
    attack_script(server, sample)
    proc = subprocess.run(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(sample), "--base-url", server.url,
         "--approval", "all", *where_shells_run(), "--show-thinking", "go"],
        capture_output=True, timeout=60, env=clean_env(loop_home), stdin=subprocess.DEVNULL)
    out = (proc.stdout + proc.stderr).decode()
    assert proc.returncode == 0, out
    assert "\x1b" not in out and "\r" not in out  # plain mode: not one escape code of any kind
    assert_no_raw_attack(out)
    assert "[2] read_file evil\\x1b]0;pwned\\x07.txt" in out  # the file name, visibly
    assert "out \\x1b]52;c;cHduZWQ=\\x07 \\u202etxt.exe \\x9b2J" in out  # shell output
    assert "no_such\\x1b]0;pwned\\x07" in out  # a tool name the model made up
    assert "+note \\x1b]0;pwned\\x07 \\u202etxt.exe" in out  # the diff of the edit
    assert "thought \\x1b]0;pwned\\x07" in out
    assert "Done \\x1b]52;c;cHduZWQ=\\x07 \\u202etxt.exe \\x9b2J \\x1b[31mred\\x1b[0m\\rcover" in out
    assert (sample / "notes.txt").read_text() == f"note {TITLE} {BIDI}\n"  # the file itself is exact


def test_json_output_stays_exact_json_with_nothing_raw(server, sample, loop_home):
    attack_script(server, sample)
    proc = subprocess.run(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(sample), "--base-url", server.url,
         "--approval", "all", *where_shells_run(), "--json", "go"],
        capture_output=True, timeout=60, env=clean_env(loop_home), stdin=subprocess.DEVNULL)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    assert_no_raw_attack(out)
    assert "\x1b" not in out and "\x7f" not in out
    lines = [json.loads(line) for line in out.splitlines()]
    shell = next(e for e in lines if e["type"] == "tool_result" and e["name"] == "shell")
    assert f"out {OSC52} {BIDI} {C1_CSI}" in shell["content"]  # the values are exact, only the encoding escapes
    answer = [e for e in lines if e["type"] == "assistant"][-1]
    assert answer["text"] == f"Done {OSC52} {BIDI} {C1_CSI} \x1b[31mred\x1b[0m\rcover\n"


def colour_env(loop_home: Path) -> dict[str, str]:
    env = clean_env(loop_home)
    env.pop("NO_COLOR")
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
    return env


@pytest.fixture
def pty_run(server, loop_home):
    """Start `loop agent` on a pty; always terminated afterwards."""
    started: list[Terminal] = []

    def start(ws: Path, *args: str, color: bool = True) -> Terminal:
        env = colour_env(loop_home) if color else {**clean_env(loop_home), "TERM": "xterm-256color"}
        t = Terminal(["agent", "-C", str(ws), "--base-url", server.url, *args], env, ws)
        started.append(t)
        return t

    yield start
    for t in started:
        t.child.close(force=True)


def test_colour_terminal_shows_every_attack_escaped(pty_run, server, sample):
    attack_script(server, sample)
    t = pty_run(sample, "--approval", "all", *where_shells_run(), "--show-thinking", "go")
    t.expect("done: completed")
    assert t.exit_code() == 0
    seen = t.seen
    assert "\x1b[" in seen  # colour mode: our own codes are there
    assert_no_raw_attack(seen)
    shown = ANSI.sub("", seen)
    assert "evil\\x1b]0;pwned\\x07.txt" in shown
    assert "out \\x1b]52;c;cHduZWQ=\\x07 \\u202etxt.exe \\x9b2J" in shown
    assert "no_such\\x1b]0;pwned\\x07" in shown
    assert "note \\x1b]0;pwned\\x07 \\u202etxt.exe" in shown
    assert "thought \\x1b]0;pwned\\x07" in shown
    assert "\\x1b]52;c;cHduZWQ=\\x07 \\u202etxt.exe \\x9b2J \\x1b[31mred\\x1b[0m\\rcover" in shown
    assert "\x1b[31mred" not in seen  # the model's own colour code did not pass as ours


def test_markdown_entities_cannot_smuggle_bidi_characters(pty_run, server, sample):
    server.add(text("**Note** &#x202e;txt.exe and &#8238;gpj.exe and &#x1b;]0;x&#7;\n"))
    t = pty_run(sample, "go")
    out = t.expect("done: completed")
    assert t.exit_code() == 0
    assert "\u202e" not in t.seen and "\x1b]" not in t.seen
    assert "\\u202etxt.exe" in out and "\\u202egpj.exe" in out


@pytest.mark.parametrize("color", [True, False], ids=["colour", "plain"])
def test_approval_prompt_shows_the_real_command_however_it_tries_to_redraw_the_line(pty_run, server, sample,
                                                                                     color):
    server.add(tools(("shell", {"command": ERASE})), text("ok"))
    t = pty_run(sample, "change things", color=color)
    shown = t.expect(r"allow\? \[y/N/a\]")
    assert "$ touch pwned.txt # \\x1b[2K\\x1b[1G      $ ls -la" in shown
    t.line("n")
    t.expect("done: completed")
    assert t.exit_code() == 0
    assert_no_raw_attack(t.seen)
    assert not (sample / "pwned.txt").exists()


def test_approval_prompt_shows_a_multi_line_command_in_full(pty_run, server, sample):
    command = "echo one\r\necho two > two.txt\n" + "\n".join(f"echo line{i}" for i in range(30)) + "\ntouch last.txt"
    server.add(tools(("shell", {"command": command})), text("ok"))
    t = pty_run(sample, "--approval", "ask", "go")
    shown = t.expect(r"allow\? \[y/N/a\]")
    assert "$ echo one\\r\n" in shown.replace("\r\n", "\n")
    assert all(f"echo line{i}" in shown for i in range(30))
    assert "touch last.txt" in shown and "…" not in shown
    t.line("")
    t.expect("done: completed")
    assert t.exit_code() == 0
    assert not (sample / "two.txt").exists()


def test_a_file_name_with_an_escape_in_a_repl_listing(tmp_path, server, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / EVIL_NAME).write_text("x\n")
    (ws / f"{BIDI}.md").write_text("y\n")
    server.add(tools(("list_files", {})), text(f"Found {EVIL_NAME}"))
    t = Terminal(["agent", "-C", str(ws), "--base-url", server.url], colour_env(loop_home), ws)
    try:
        t.expect(r"approval \w+ · context")
        t.line("list")
        shown = t.expect("done: completed")
        t.expect(r"approval \w+ · context")
        t.child.sendcontrol("d")
        assert t.exit_code() == 0
    finally:
        t.child.close(force=True)
    assert_no_raw_attack(t.seen)
    assert "Found evil\\x1b]0;pwned\\x07.txt" in shown


# ---- the pieces: the escape function, the approver's sandbox line ----------------------------------

def test_printable_escapes_controls_and_bidi_but_keeps_text_newlines_and_tabs():
    assert printable("a\tb\nc ünï 中文 ✓") == "a\tb\nc ünï 中文 ✓"
    assert printable(OSC52) == "\\x1b]52;c;cHduZWQ=\\x07"
    assert printable("a\rb\x00\x7f\x85\x9f") == "a\\rb\\x00\\x7f\\x85\\x9f"
    assert printable("\u202a\u202e\u2066\u2069\u200e\u200f\u061c") == (
        "\\u202a\\u202e\\u2066\\u2069\\u200e\\u200f\\u061c")
    assert printable(printable(TITLE)) == printable(TITLE)  # escaping twice changes nothing more


def shell_call(command: str) -> ToolCall:
    return ToolCall("c1", "shell", json.dumps({"command": command}))


@pytest.mark.parametrize("color", [True, False], ids=["colour", "plain"])
def test_approval_names_the_sandbox_under_a_shell_command_only(color):
    out = io.StringIO()
    renderer = TerminalRenderer(out, color=color, live=False, width=100)
    approver = PromptApprover(read=io.StringIO("y\ny\n"), out=out, show=renderer.show_approval,
                              sandbox="sandbox: workspace writable, no network")
    ask = Decision("ask", "touch is not known to be read-only", "")
    assert approver.approve(shell_call(f"touch {TITLE}x"), f"touch {TITLE}x", f"touch {TITLE}x", ask, Cancel())
    edit = ToolCall("c2", "write_file", '{"path": "a.txt"}')
    assert approver.approve(edit, "a.txt", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n", ask, Cancel())
    shown = ANSI.sub("", out.getvalue())
    lines = shown.splitlines()
    command = lines.index("      $ touch \\x1b]0;pwned\\x07x")
    assert lines[command + 1] == "      sandbox: workspace writable, no network"
    assert shown.count("sandbox:") == 1  # not under the edit
    assert "\x1b]" not in out.getvalue()


def test_plain_fallback_question_is_escaped_and_names_the_sandbox():
    out = io.StringIO()
    approver = PromptApprover(read=io.StringIO("\n"), out=out, sandbox="not sandboxed")
    assert not approver.approve(shell_call(ERASE), ERASE, ERASE, Decision("ask", f"why {TITLE}", ""), Cancel())
    lines = out.getvalue().splitlines()
    assert lines[0] == "      $ touch pwned.txt # \\x1b[2K\\x1b[1G      $ ls -la"
    assert lines[1] == "      not sandboxed"
    assert lines[2] == "      needs approval: why \\x1b]0;pwned\\x07"
    assert "\x1b" not in out.getvalue()
