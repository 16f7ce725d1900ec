"""The README's examples are what `loop` prints, so they cannot drift from it.

The REPL transcript: the demo's recorded run, typed into the real REPL on a 100-column pty, approved
with y, then /undo and /exit. The `--json` example: the README's own command line, run in a copy of
the demo's sample against the fake server, which answers as the example's model did. Only what
differs from run to run is normalised: ids and times (a session's time stamp, a checkpoint hash, the
timings of pytest and of a call), paths (LOOP_HOME and the workspace key), and the sandbox line
where bwrap cannot run."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import Reply, text_events, tool_events
from tests.pty import Terminal
from tests.screen import Screen

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "loopagent" / "demo"
STAMP = (re.compile(r"\b\d{8}T\d{6}Z-"), "TIME-")  # a session id begins with the time it started
VARYING = [STAMP, (re.compile(r"\b[0-9a-f]{8}\b"), "HASH"), (re.compile(r"in \d+\.\d+s"), "in Ts"),
           (re.compile(r" \(\d+\.\ds\)"), "")]  # a call's time shows only when it took long
SANDBOX_LINE = re.compile(r"^\s+(sandboxed|not sandboxed|unsandboxed)\b")


def readme_transcript() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```\n> Fix the failing test") + 4
    return text[start:text.index("```", start)].rstrip("\n").split("\n")


def screen_lines(seen: str) -> list[str]:
    """The screen as a person reads it at the end (spinner frames and the prompt's redraws are drawn
    over), without blank lines."""
    screen = Screen(100)
    screen.feed(seen)
    return [line for line in screen.lines() if line.strip()]


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
        t.expect(r"--resume \S+\r?\n")
        assert t.exit_code() == 0
    finally:
        t.child.close(force=True)
    shown = screen_lines(t.seen)
    first = next(i for i, line in enumerate(shown) if "> Fix the failing test" in line)
    shown[first] = shown[first][shown[first].index("> Fix"):]  # the first prompt is drawn twice in its place
    last = next(i for i, line in enumerate(shown) if line.startswith("session "))
    sandboxed = not sandbox
    assert normalised(shown[first:last + 1], sandboxed) == normalised(readme_transcript(), sandboxed)


# ---- the --json example --------------------------------------------------------------------------

def readme_json() -> tuple[list[str], list[str]]:
    """The command line of the README's `--json` example and the lines it shows."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```sh\nloop agent --ctx-size 32768 --json") + 6
    command = shlex.split(text[start:text.index("\n", start)])
    block = text.index("```json\n", start) + 8
    return command, text[block:text.index("```", block)].rstrip("\n").split("\n")


def json_normalised(line: str) -> str:
    line = STAMP[0].sub(STAMP[1], line)
    return re.sub(r'"path": "[^"]*/sessions/[^/"]+-[0-9a-f]{8}/', '"path": "HOME/sessions/KEY/', line)


def test_the_readme_json_example_is_the_real_output(tmp_path, loop_home, server):
    command, shown = readme_json()
    assert command[:2] == ["loop", "agent"]
    ws = tmp_path / "sample"
    shutil.copytree(DEMO / "sample", ws)
    # The model of the example: a search, then the answer (its words and token counts are the model's).
    server.add(Reply(events=tool_events(("grep", {"pattern": "def python"}), text="Let me search for it.",
                                        usage=(1204, 38), ids=["call_1"])),
               Reply(events=text_events("`python_sources` in path_rules.py (line 5): it keeps the `.py` paths "
                                        "under `src/`, in POSIX form, in the order given.", usage=(1262, 41))))
    proc = subprocess.run([sys.executable, "-m", "loopagent", "agent", "--base-url", server.url, *command[2:]],
                          cwd=ws, env=clean_env(loop_home), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [json_normalised(line) for line in proc.stdout.splitlines()] == [json_normalised(line) for line in shown]
