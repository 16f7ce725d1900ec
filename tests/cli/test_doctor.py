"""`loop doctor` end to end: the real entry point against fake servers of each shape, over real HTTP.

A good server, llama-cpp-python's empty streamed tool reply, nothing listening, a server that wants
a key, and one whose model answers but never calls a tool. What doctor learns must reach servers.json
the way a run would record it, so the next `loop agent` run behaves accordingly.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer, completion, empty_stream, error, text, tools

READ = ("read_file", {"path": "README.md"})
PROPS = {"default_generation_settings": {"n_ctx": 8192}}


def doctor(run_loop, *args: str, tmp_path: Path):
    return run_loop("doctor", "-C", str(tmp_path), *args, timeout=60)


def rows(stdout: str) -> dict[str, str]:
    """The table as {check: 'answer detail'}."""
    found = {}
    for line in stdout.splitlines():
        m = re.match(r"  (\S.*?)  +(\S.*)$", line)
        if m:
            found[m.group(1).strip()] = m.group(2)
    return found


def servers_file(loop_home: Path) -> dict:
    return json.loads((loop_home / "servers.json").read_text())["servers"]


def chat_requests_were_small(srv: FakeServer) -> None:
    assert 1 <= len(srv.requests) <= 4  # the fourth: does the server enforce a schema (tests/output/)
    assert all(r["max_tokens"] <= 64 for r in srv.requests)
    # the tool probes are a run's first request (loop's system prompt and tools): no bigger than that
    assert all(len(json.dumps(r["messages"])) < 4000 for r in srv.requests)
    tool_probes = [r for r in srv.requests if r.get("tools")]
    assert all(r["messages"][0]["content"].startswith("You are loop") for r in tool_probes)


def test_good_server_every_row_says_yes_exit_0_and_servers_json_learns(run_loop, tmp_path, loop_home):
    script = [text("ok"), tools(READ), completion(calls=[READ]), text('{"answer": "mauve-7"}')]
    with FakeServer(script, models=["qwen-small", "other"], props=PROPS) as srv:
        proc = doctor(run_loop, "--base-url", srv.url, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = rows(proc.stdout)
    for check in ("reachable", "models listed", "streamed text", "streamed tool call", "non-streamed tool call",
                  "usage reported"):
        assert table[check].startswith("yes"), (check, proc.stdout)
    assert "qwen-small, other" in table["models listed"]
    assert table["context size"].startswith("8192") and "llama.cpp /props" in table["context size"]
    assert re.match(r"\d+ ms", table["time to first token"])
    assert "tokens per second" in table
    assert "verdict: loop can work with this server" in proc.stdout
    assert "stream_tools: true" in proc.stdout and "ctx_size: 8192 (from llama.cpp /props)" in proc.stdout
    chat_requests_were_small(srv)
    assert [r["stream"] for r in srv.requests] == [True, True, False, True]
    assert "tools" not in srv.requests[0] and srv.requests[1]["tool_choice"] == "auto"
    # the fourth asks for a reply shaped by a schema the model would not meet by chance
    assert srv.requests[3]["response_format"]["type"] == "json_schema" and "tools" not in srv.requests[3]
    assert table["schema enforced"].startswith("yes")
    record = servers_file(loop_home)[f"openai {srv.url} default"]
    assert record["stream_tools"] is True and record["ctx_size"] == 8192


def test_empty_body_stream_reports_non_streamed_tools_only_and_the_next_run_does_not_stream_them(
        run_loop, tmp_path, loop_home):
    script = [text("ok"), empty_stream(), completion(calls=[READ])]
    with FakeServer(script, models=["llama"]) as srv:
        proc = doctor(run_loop, "--base-url", srv.url, tmp_path=tmp_path)
        assert proc.returncode == 0, proc.stderr
        table = rows(proc.stdout)
        assert table["streamed tool call"].startswith("no") and "empty body" in table["streamed tool call"]
        assert table["non-streamed tool call"].startswith("yes")
        assert "without streaming" in proc.stdout.split("verdict:")[1].splitlines()[0]
        assert "stream_tools: false (streamed tool calls came back empty)" in proc.stdout
        assert servers_file(loop_home)[f"openai {srv.url} default"]["stream_tools"] is False
        # What doctor learned is what a run uses: the first request with tools goes unstreamed.
        srv.add(completion("done"))
        run = run_loop("agent", "-C", str(tmp_path), "--base-url", srv.url, "--json", "--no-checkpoints", "hi")
        assert run.returncode == 0, run.stderr
        assert srv.requests[-1]["stream"] is False and srv.requests[-1]["tools"]


def test_nothing_listening_is_one_line_exit_1(run_loop, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = doctor(run_loop, "--base-url", f"http://127.0.0.1:{port}/v1", tmp_path=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"cannot reach http://127.0.0.1:{port}/v1" in lines[0] and "connection refused" in lines[0]
    assert "--base-url" in lines[0]


def test_a_server_that_wants_a_key_exits_1_with_a_hint_and_never_shows_the_key(run_loop, tmp_path):
    refusal = error(401, "Invalid API key")
    with FakeServer([], models=refusal) as srv:
        bare = doctor(run_loop, "--base-url", srv.url, tmp_path=tmp_path)
        keyed = doctor(run_loop, "--base-url", srv.url, "--api-key", "sk-doctor-secret-1234", tmp_path=tmp_path)
        assert srv.requests == []  # refused at GET /models: no chat request is worth sending
    assert bare.returncode == 1 and "HTTP 401" in bare.stderr and "Invalid API key" in bare.stderr
    assert "pass --api-key KEY or set LOOP_API_KEY" in bare.stderr
    assert keyed.returncode == 1 and "refused the API key" in keyed.stderr
    assert "sk-doctor-secret-1234" not in keyed.stdout + keyed.stderr
    assert "Traceback" not in bare.stderr + keyed.stderr


def test_a_model_that_answers_but_never_calls_a_tool_cannot_work_exit_1(run_loop, tmp_path):
    script = [text("ok"), text("It is sunny in Paris."), completion("It is sunny in Paris.")]
    with FakeServer(script, models=["chatty"]) as srv:
        proc = doctor(run_loop, "--base-url", srv.url, tmp_path=tmp_path)
    assert proc.returncode == 1, proc.stdout
    table = rows(proc.stdout)
    assert table["streamed text"].startswith("yes")
    assert table["streamed tool call"].startswith("no") and "without a tool call" in table["streamed tool call"]
    assert table["non-streamed tool call"].startswith("no")
    assert "verdict: loop cannot work with this server" in proc.stdout and "tool call" in proc.stdout


def test_a_call_written_into_the_text_counts_as_a_working_path(run_loop, tmp_path):
    written = '<tool_call>{"name": "read_file", "arguments": {"path": "README.md"}}</tool_call>'
    with FakeServer([text("ok"), text(written), completion(written)]) as srv:
        proc = doctor(run_loop, "--base-url", srv.url, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "loop takes it as a call" in rows(proc.stdout)["streamed tool call"]
    assert rows(proc.stdout)["models listed"].startswith("no")  # this server has no GET /models


def test_json_output_and_credentials_in_the_url_are_never_printed(run_loop, tmp_path):
    script = [text("ok"), tools(READ), completion(calls=[READ])]
    with FakeServer(script, models=["m"], props=PROPS) as srv:
        secret_url = srv.url.replace("http://", "http://user:pw-in-url-5678@") + "?api_key=qk-9876543"
        proc = doctor(run_loop, "--base-url", secret_url, "-m", "m", "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["url"] == srv.url and report["model"] == "m"
    assert {c["check"]: c["answer"] for c in report["checks"]}["streamed tool call"] == "yes"
    assert report["settings"]["stream_tools"] is True and report["verdict"].startswith("loop can work")
    assert "pw-in-url-5678" not in proc.stdout + proc.stderr and "qk-9876543" not in proc.stdout + proc.stderr


def test_a_configured_context_size_and_stream_setting_win_and_are_named(run_loop, tmp_path, loop_home):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text('{"ctx_size": 4096, "stream_tools": false}')
    script = [text("ok"), tools(READ), completion(calls=[READ])]
    with FakeServer(script, props=PROPS) as srv:
        proc = doctor(run_loop, "--base-url", srv.url, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    settings = proc.stdout.split("settings:")[1]
    assert "stream_tools: false (from user file" in settings and "ctx_size: 4096 (from user file" in settings


@pytest.mark.parametrize("bad", ['{"prices": {"m": {"input": -1, "output": 1}}}', '{"max_steps": 0}'])
def test_a_bad_config_is_one_line_exit_2(run_loop, tmp_path, loop_home, bad):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(bad)
    proc = doctor(run_loop, "--base-url", "http://127.0.0.1:9/v1", tmp_path=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_a_server_that_accepts_but_never_answers_is_one_line_exit_1(run_loop, tmp_path):
    with socket.socket() as s:  # listening, never accepting: the connection opens, no byte comes back
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        proc = doctor(run_loop, "--base-url", f"http://127.0.0.1:{s.getsockname()[1]}/v1", tmp_path=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "no answer from" in proc.stderr, proc.stderr


@pytest.mark.parametrize(("owner", "says", "never"), [
    ("me", "--chat_format chatml-function-calling", "llama-server: start it with --jinja"),
    ("llamacpp", "llama-server: start it with --jinja", "--chat_format"),
    ("vllm", "--enable-auto-tool-choice --tool-call-parser", "--jinja"),
])
def test_the_advice_for_a_model_that_never_calls_a_tool_names_the_detected_servers_flag(owner, says, never):
    from loopagent.cli.doctor import Probe, verdict
    from loopagent.client.probe import server_kind

    kind = server_kind({"data": [{"id": "m", "owned_by": owner}]})
    said = verdict(Probe(reply=object()), False, False, kind)
    assert said.startswith("loop cannot work with this server") and says in said and never not in said


def test_doctor_detects_llama_cpp_python_names_its_flag_and_reports_a_window_it_stated(run_loop, tmp_path, loop_home):
    """llama-cpp-python reports its window nowhere; an earlier run's HTTP 400 stated it (tests/client/test_server_window.py)."""
    import time

    from loopagent.client.refusal import SOURCE
    from loopagent.servers import ServerBook

    script = [text("ok"), text("It is sunny."), completion("It is sunny.")]
    models = [{"id": "small", "object": "model", "owned_by": "me", "permissions": []}]  # llama-cpp-python's list
    with FakeServer(script, models=models) as srv:
        ServerBook(loop_home).update(f"openai {srv.url} small", ctx_size=2048, ctx_source=SOURCE,
                                     ctx_learned=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        proc = doctor(run_loop, "--base-url", srv.url, "-m", "small", tmp_path=tmp_path)
    assert proc.returncode == 1, proc.stdout
    line = proc.stdout.split("verdict:")[1].splitlines()[0]
    assert "llama-cpp-python: start it with --chat_format chatml-function-calling" in line
    table = rows(proc.stdout)
    assert table["context size"].startswith("2048") and SOURCE in table["context size"]
    assert "ctx_size: 2048 (from its HTTP 400 error" in proc.stdout
    assert servers_file(loop_home)[f"openai {srv.url} small"]["ctx_size"] == 2048  # the probe found none: kept
