"""The README's REPL transcript is what `loop` prints: the demo's recorded run, typed into the real
REPL on a 100-column pty, approved with y, then /undo. Only what differs from run to run (a checkpoint
hash, pytest's and the call's timings) and the sandbox line where bwrap cannot run are normalised."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from tests.conftest import clean_env, where_shells_run
from tests.pty import ANSI, Terminal

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "loopagent" / "demo"
SPINNER = re.compile(r"^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ")
VARYING = [(re.compile(r"\b[0-9a-f]{8}\b"), "HASH"), (re.compile(r"in \d+\.\d+s"), "in Ts"),
           (re.compile(r" \(\d+\.\ds\)"), "")]  # a call's time shows only when it took long
SANDBOX_LINE = re.compile(r"^\s+(sandboxed|not sandboxed|unsandboxed)\b")


def readme_transcript() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```\n> Fix the failing test") + 4
    return text[start:text.index("```", start)].rstrip("\n").split("\n")


def screen_lines(seen: str) -> list[str]:
    """The screen as a person reads it: each line's last redraw, without spinner frames or the
    prompt's own redraws."""
    out = []
    for raw in re.split(r"\r?\n", ANSI.sub("", seen)):
        line = re.sub(r"[\x00-\x08]", "", raw.rstrip("\r").split("\r")[-1]).rstrip()
        if line.strip() and not SPINNER.match(line) and not line.startswith(" > ") and line != ">":
            out.append(line)
    return out


def normalised(lines: list[str], sandboxed: bool) -> list[str]:
    out = []
    for line in lines:
        if not sandboxed and SANDBOX_LINE.match(line):
            continue
        for pattern, stand_in in VARYING:
            line = pattern.sub(stand_in, line)
        out.append(line)
    return out


def test_the_readme_repl_transcript_is_the_real_output(tmp_path, loop_home):
    ws = tmp_path / "sample"
    shutil.copytree(DEMO / "sample", ws)
    env = clean_env(loop_home)
    env.update(TERM="xterm", COLUMNS="100", LINES="40",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    sandbox = where_shells_run()
    t = Terminal(["agent", "-C", str(ws), "--replay", str(DEMO / "recording.json"), *sandbox], env, ws,
                 dimensions=(40, 100))
    try:
        t.prompt()
        t.line("Fix the failing test in tests/test_path_rules.py without changing the tests.")
        t.expect(r"allow\? \[y/N/a\] ", timeout=60)
        t.line("y")
        t.expect(r"done: [^\r\n]*", timeout=120)
        t.prompt()
        t.line("/undo")
        t.expect(r"undone: [^\r\n]*\)")
        t.line("/exit")
        assert t.exit_code() == 0
    finally:
        t.child.close(force=True)
    shown = screen_lines(t.seen)
    first = next(i for i, line in enumerate(shown) if line.startswith("> Fix the failing test"))
    last = next(i for i, line in enumerate(shown) if line.startswith("undone: "))
    sandboxed = not sandbox
    assert normalised(shown[first:last + 1], sandboxed) == normalised(readme_transcript(), sandboxed)
