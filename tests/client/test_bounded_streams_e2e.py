"""Bounded time and memory, end to end: the real `loop` against hostile streams and a huge file.

Peak memory is the child's own: a small launcher reaps it with os.wait4 (see LAUNCHER).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import FakeServer, Reply, _chunk, text, text_events, tool_events, tools

RSS_LIMIT_KB = 200 * 1024


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_kb: int
    seconds: float

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


# Peak RSS survives fork and exec (the kernel keeps the largest seen in the process's signal
# struct), so a child forked straight from a large pytest would report pytest's size. A small
# launcher forks the real command instead: its child starts with a fresh count.
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_measured(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 90) -> Run:
    """`python -m loopagent ARGS` started by a small launcher that reaps it with wait4 for its peak RSS."""
    full_env = {**clean_env(home), **(env or {})}
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        report = Path(tmp) / "report"
        start = time.monotonic()
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(report), sys.executable, "-m", "loopagent",
                                     *args], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=full_env,
                                    start_new_session=True)
        try:
            launcher.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, 9)
            launcher.wait(10)
            pytest.fail(f"loop did not end within {timeout} s")
        seconds = time.monotonic() - start
        code, peak_kb = (int(x) for x in report.read_text().split())
        out.seek(0)
        err.seek(0)
        return Run(code, out.read().decode(), err.read().decode(), peak_kb, seconds)


def agent(home: Path, server: FakeServer, ws: Path, *extra: str, env: dict[str, str] | None = None) -> Run:
    return run_measured(home, "agent", "-C", str(ws), "--base-url", server.url, "--api-key", "sk-dummy",
                        "--json", *extra, "do the task", env=env)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    return root


def sse(chunk: dict) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def endless(piece: bytes) -> Iterator[bytes]:
    while True:
        yield piece


@pytest.mark.parametrize("piece", [b": keep-alive\n\n", sse(_chunk({})), sse(_chunk({"content": ""}))],
                         ids=["keep-alives", "empty-deltas", "empty-content"])
def test_a_server_that_sends_nothing_forever_ends_the_run_at_the_idle_deadline(loop_home, ws, piece):
    with FakeServer([Reply(stream=lambda: endless(piece), delay=0.02)]) as srv:
        run = agent(loop_home, srv, ws, env={"LOOP_READ_TIMEOUT": "1"})
        assert len(srv.requests) == 1  # reported once, never retried
    result = run.events()[-1]
    assert run.returncode == 1, run.stderr
    assert result["type"] == "result" and result["status"] == "incomplete_model_turn"
    assert "no text, thinking or tool call for 1 s" in result["message"]
    assert run.seconds < 30


def test_a_300_mb_line_without_a_newline_is_an_incomplete_turn_in_bounded_memory(loop_home, ws):
    mb = b"a" * (1 << 20)  # one buffer sent 300 times: the test holds 1 MB, not 300

    def stream() -> Iterator[bytes]:
        yield sse(_chunk({"role": "assistant", "content": ""}))
        yield b'data: {"choices": [{"index": 0, "delta": {"content": "'
        for _ in range(300):
            yield mb

    with FakeServer([Reply(stream=stream)]) as srv:
        run = agent(loop_home, srv, ws)
    result = run.events()[-1]
    assert run.returncode == 1, run.stderr
    assert result["status"] == "incomplete_model_turn"
    assert "passed 16 MB without ending" in result["message"]
    assert run.peak_kb < RSS_LIMIT_KB, f"peak RSS {run.peak_kb // 1024} MB"


def test_read_file_of_a_2_gib_sparse_file_answers_binary_at_once(loop_home, ws):
    with open(ws / "disk.img", "wb") as f:
        f.truncate(2 * 1024**3)  # zeros, no blocks on disk: NUL bytes make it binary
    with FakeServer([tools(("read_file", {"path": "disk.img"})), text("It is a disk image.")]) as srv:
        run = agent(loop_home, srv, ws)
        assert run.returncode == 0, run.stderr
        tool_msg = srv.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool"
    assert "disk.img is a binary file (2147483648 bytes)" in tool_msg["content"]
    assert run.peak_kb < RSS_LIMIT_KB, f"peak RSS {run.peak_kb // 1024} MB"
    assert run.seconds < 30


def test_read_file_of_a_large_text_file_pages_it_without_reading_it_whole(loop_home, ws):
    line = b"x" * 99 + b"\n"
    with open(ws / "big.log", "wb") as f:
        for _ in range(300):  # 30 MB of text; the page needs the first 50 KB
            f.write(line * 1000)
    with FakeServer([tools(("read_file", {"path": "big.log", "limit": 5})), text("ok")]) as srv:
        run = agent(loop_home, srv, ws)
        assert run.returncode == 0, run.stderr
        content = srv.requests[1]["messages"][-1]["content"]
    assert content.splitlines()[:5] == [f"{n:>6}\t{'x' * 99}" for n in range(1, 6)]
    assert "continue with offset=5" in content and "too large to count its lines" in content


def test_content_filter_with_tool_calls_runs_nothing(loop_home, ws):
    calls = [("write_file", {"path": "canary.txt", "content": "x"}), ("shell", {"command": "touch canary2"})]
    with FakeServer([Reply(events=tool_events(calls, finish="content_filter")), text("never asked")]) as srv:
        run = agent(loop_home, srv, ws, "--approval", "all", *where_shells_run())
        assert len(srv.requests) == 1
    out = run.events()
    assert run.returncode == 1, run.stderr
    assert out[-1]["status"] == "incomplete_model_turn"
    assert "content filter" in out[-1]["message"] and "2 tool calls did not run" in out[-1]["message"]
    assert not [e for e in out if e["type"] in ("tool_call", "tool_result")]
    assert not (ws / "canary.txt").exists() and not (ws / "canary2").exists()


def test_an_empty_reply_is_not_a_silent_success(loop_home, ws):
    with FakeServer([Reply(events=text_events(""))]) as srv:
        run = agent(loop_home, srv, ws)
    result = run.events()[-1]
    assert run.returncode == 1, run.stderr
    assert result["status"] == "incomplete_model_turn"
    assert "empty reply: no text and no tool calls" in result["message"]
