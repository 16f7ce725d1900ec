"""A server's window is heard (issue 22 item 4): the HTTP 400 that states it ends the run with advice and teaches the next run.

llama-cpp-python without `--n_ctx` has 2,048 tokens and reports that nowhere; loop assumed 16,384,
ran 11 steps and ended on the server's raw 400. Each server's refusal (tests/streams/ctx400_*.json)
is served here as an HTTP 400 by the fake server and read by the real client: the window it states
is the advice (`--ctx-size N`), it is kept in servers.json, the next run's session line says
`ctx_source: server` with that size, and the preflight check judges the first request by it
(`loop doctor` reports it: tests/cli/test_doctor.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.client import ModelError
from loopagent.client.openai import OpenAIClient
from loopagent.client.refusal import SOURCE, WindowExceeded, stated_window
from loopagent.messages import UserMessage
from loopagent.servers import ServerBook
from tests.fakeserver import FakeServer, Reply, error, text

STREAMS = Path(__file__).parent.parent / "streams"
REFUSALS = [("ctx400_llamaserver.json", 4096), ("ctx400_llamaserver_old.json", 4096),
            ("ctx400_llamacpp_python.json", 2048), ("ctx400_llamacpp_python_raw.json", 2048),
            ("ctx400_vllm.json", 8192), ("ctx400_vllm_new.json", 8192), ("ctx400_openai.json", 128000),
            ("ctx400_ollama.json", None)]


def refusal(name: str) -> Reply:
    return Reply(status=400, body=(STREAMS / name).read_bytes(), headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(("name", "window"), REFUSALS)
def test_each_server_refusal_gives_the_window_and_keeps_it(name, window, tmp_path):
    book = ServerBook(tmp_path)
    with FakeServer([refusal(name)]) as srv:
        client = OpenAIClient(srv.url, "m", retries=0, servers=book)
        try:
            with pytest.raises(WindowExceeded) as caught:
                client.complete([UserMessage("hi")], [], lambda e: None, Cancel())
        finally:
            client.close()
    said = str(caught.value)
    assert caught.value.window == window and said.startswith("HTTP 400 from ")
    kept = book.get(client.server_key)
    if window:
        assert f"--ctx-size {window}" in said and f"{window:,} tokens" in said
        assert (kept.ctx_size, kept.ctx_source) == (window, SOURCE) and kept.ctx_learned
    else:  # Ollama names no number: the advice, nothing kept
        assert "--ctx-size" in said and "num_ctx" in said and kept.ctx_size is None


def test_other_400s_and_unbelievable_numbers_are_not_windows(tmp_path):
    assert stated_window("This model's maximum context length is 99999999999 tokens", None) is None
    assert stated_window("bad", {"error": {"n_ctx": "lots"}}) is None
    book = ServerBook(tmp_path)
    with FakeServer([error(400, "messages: field required")]) as srv:
        client = OpenAIClient(srv.url, "m", retries=0, servers=book)
        with pytest.raises(ModelError) as caught:
            client.complete([UserMessage("hi")], [], lambda e: None, Cancel())
        client.close()
    assert not isinstance(caught.value, WindowExceeded) and not (tmp_path / "servers.json").exists()


def run(run_loop, server, ws: Path, *extra: str):
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints", *extra, "hi",
                    timeout=60)
    return proc, [json.loads(line) for line in proc.stdout.splitlines()]


def test_the_refused_window_is_advised_then_used_by_the_next_run(run_loop, workspace, loop_home):
    with FakeServer([refusal("ctx400_llamacpp_python.json"), text("hello")]) as srv:
        first, out = run(run_loop, srv, workspace)
        assert first.returncode == 1, first.stderr
        assert out[0]["ctx_size"] == 16384 and out[0]["ctx_source"] == "default"
        assert out[-1]["status"] == "model_error" and "--ctx-size 2048" in out[-1]["message"]
        kept = json.loads((loop_home / "servers.json").read_text())["servers"]
        assert [(r["ctx_size"], r["ctx_source"]) for r in kept.values()] == [(2048, SOURCE)]

        second, out = run(run_loop, srv, workspace)
        assert second.returncode == 0, second.stderr
        assert (out[0]["ctx_size"], out[0]["ctx_source"]) == (2048, "server")
        assert srv.requests[1]["max_tokens"] <= 1024  # the reply budget of a 2048 window, not of 16384


def test_the_preflight_check_uses_a_recorded_window(run_loop, workspace, loop_home):
    with FakeServer([text("never sent")]) as srv:
        book = ServerBook(loop_home)
        key = OpenAIClient(srv.url, "local", servers=book).server_key  # the default model name
        book.update(key, ctx_size=512, ctx_source=SOURCE, ctx_learned=_now())
        proc, _ = run(run_loop, srv, workspace, "-m", "local")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "context size 512" in proc.stderr and "kept in servers.json" in proc.stderr
        assert "--ctx-size" in proc.stderr and srv.requests == []


def _now() -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def test_a_refused_window_outlives_the_days_after_which_silent_endpoints_are_asked_again(run_loop, workspace,
                                                                                          loop_home):
    with FakeServer([text("hello")]) as srv:  # the fake's endpoints report no window, as llama-cpp-python's
        book = ServerBook(loop_home)
        key = OpenAIClient(srv.url, "local", servers=book).server_key
        book.update(key, ctx_size=2048, ctx_source=SOURCE, ctx_learned="2026-01-01T00:00:00Z")
        proc, out = run(run_loop, srv, workspace, "-m", "local")
        assert proc.returncode == 0, proc.stderr
        assert (out[0]["ctx_size"], out[0]["ctx_source"]) == (2048, "server")
        assert ServerBook(loop_home).get(key).ctx_learned != "2026-01-01T00:00:00Z"  # asked again, then kept
