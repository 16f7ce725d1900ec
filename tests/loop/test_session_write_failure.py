"""A session file that cannot be written stops the run through the loop's explicit `health` path:
status `error`, exit 1, steps and usage kept, one line on stderr, never a traceback (one-shot and REPL).

The failure is real and needs no root: the child runs under RLIMIT_FSIZE, so once the session file
reaches the limit the kernel refuses the write (EFBIG; Python ignores SIGXFSZ). The first turn's
three parallel reads take the file over the limit in the middle of their batch.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pexpect

from loopagent.events import MessageAdded, RunEnd
from loopagent.messages import Usage, UserMessage
from loopagent.session import SessionWriter
from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import text, tools
from tests.pty import Terminal

LIMIT = 40_000  # bytes a file of the child may grow to: the header, the prompt and one result fit


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def big_files(ws: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text("".join(f"{name} line {i}: some text to read, long enough\n" for i in range(500)))


def reads() -> object:
    return tools(*[("read_file", {"path": name}) for name in ("a.txt", "b.txt", "c.txt")])


def test_the_writer_records_its_failure_instead_of_raising_through_emit(tmp_path):
    import os

    writer = SessionWriter(Path("/dev/full"), os.open("/dev/full", os.O_WRONLY))
    writer(MessageAdded(UserMessage("x"), 0))  # a listener: never raises
    assert "/dev/full" in writer.health() and "No space left" in writer.health()
    writer(RunEnd("error", 0, Usage()))
    writer.close()


def test_one_shot_stops_with_error_exit_1_keeping_steps_and_usage(server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    big_files(ws)
    server.add(reads(), text("never asked"))
    proc = subprocess.run(
        [sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url, "--json",
         "--approval", "all", "--no-checkpoints", *where_shells_run(), "read the three files"],
        env=clean_env(loop_home), capture_output=True, text=True, timeout=60, preexec_fn=limited,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    failures = [ln for ln in proc.stderr.splitlines() if "cannot write session file" in ln]
    assert len(failures) == 1 and failures[0].startswith("loop: ") and "File too large" in failures[0]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    result = lines[-1]
    assert result["type"] == "result" and result["status"] == "error"
    assert result["steps"] == 1 and result["usage"] == {"prompt_tokens": 100, "completion_tokens": 10}
    assert "cannot write session file" in result["message"]
    # Every call of the broken turn has its one result; nothing further was asked of the model.
    assert len([e for e in lines if e["type"] == "tool_result"]) == 3
    assert len(server.requests) == 1
    session = Path(lines[0]["path"])
    assert 0 < session.stat().st_size <= LIMIT
    first = json.loads(session.read_text().splitlines()[0])
    assert first["type"] == "header"


def test_the_repl_says_it_once_and_exits_1_without_a_traceback(server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    big_files(ws)
    before = {p.name: p.read_text() for p in ws.iterdir()}
    server.add(reads(), text("never asked"))
    env = clean_env(loop_home)
    env.update(TERM="xterm", COLUMNS="120", LINES="40")
    t = Terminal.__new__(Terminal)
    t.seen = ""
    t.child = pexpect.spawn(sys.executable, ["-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url,
                                             "--approval", "all", "--no-checkpoints", *where_shells_run()],
                            env=env, cwd=str(ws), encoding="utf-8", timeout=20, dimensions=(40, 120),
                            preexec_fn=limited)
    try:
        t.prompt()
        t.line("read the three files")
        assert t.exit_code(timeout=30) == 1
    finally:
        t.child.close(force=True)
    seen = t.seen + (t.child.before or "")
    assert seen.count("loop: cannot write session file") == 1, seen
    assert "Traceback" not in seen
    assert {p.name: p.read_text() for p in ws.iterdir()} == before  # the user's files are as they were
    assert len(server.requests) == 1
    (session,) = (loop_home / "sessions").rglob("*.jsonl")
    records = [json.loads(line) for line in session.read_text().splitlines()[:3]]
    assert [r.get("role") for r in records[1:]] == ["system", "user"]  # the user's message was kept
    assert records[2]["content"] == "read the three files"
