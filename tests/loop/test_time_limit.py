"""`--timeout SECONDS`: a wall-clock limit of the run, enforced during a slow stream and during a
running tool through the cancel token. The run ends `time_limit` (exit 3), promptly, with nothing
left running."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, Reply, _chunk, text, tools
from tests.loop.test_signals_headless import marked

LIMIT = 2.0
MARGIN = 4.0  # interpreter start-up and a loaded machine; the point is "not 30 s"


def endless():
    """A stream that never ends: a word every 0.2 s (the server's `delay`)."""
    yield f"data: {json.dumps(_chunk({'role': 'assistant', 'content': ''}))}\n\n".encode()
    while True:
        yield f"data: {json.dumps(_chunk({'content': 'slow '}))}\n\n".encode()


def run(run_loop, server: FakeServer, ws: Path, *extra: str):
    begun = time.monotonic()
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), "--timeout", f"{LIMIT:g}", *extra, "go", timeout=60)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc, events, time.monotonic() - begun


def test_a_slow_stream_is_stopped_at_the_time_limit(workspace, run_loop):
    with FakeServer([Reply(stream=endless, delay=0.2)]) as server:
        proc, events, took = run(run_loop, server, workspace)
    assert proc.returncode == 3, proc.stderr
    result = events[-1]
    assert result["type"] == "result" and result["status"] == "time_limit"
    assert "time limit of 2 s" in result["message"]
    assert took < LIMIT + MARGIN
    assert "slow" in next(e for e in events if e["type"] == "assistant")["text"]  # the partial answer stays


def test_a_running_tool_is_killed_at_the_time_limit(workspace, run_loop):
    marker = f"timeout-marker-{time.monotonic_ns()}"
    with FakeServer([tools(("shell", {"command": f"sleep 30 # {marker}"})), text("never asked")]) as server:
        proc, events, took = run(run_loop, server, workspace)
    assert proc.returncode == 3, proc.stderr
    assert events[-1]["status"] == "time_limit"
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["is_error"]
    assert result["content"].startswith("stopped at the time limit of 2 s (--timeout) after ")  # not "by the user"
    assert took < LIMIT + MARGIN
    assert len(server.requests) == 1  # nothing more was asked of the model
    assert marked(marker) == []  # no surviving process
    session = Path(next(e for e in events if e["type"] == "session")["path"])
    assert json.loads(session.read_text().splitlines()[-1])["status"] == "time_limit"

