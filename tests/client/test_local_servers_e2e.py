"""Local servers end to end: the real `loop` against fake servers shaped like llama.cpp, Ollama and small models.

Non-streaming fallback (and servers.json across runs), tool calls recovered from the text, replies
cut at max_tokens, sampling settings, and connection retries shown as they happen.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.fakeserver import (
    FakeServer,
    Reply,
    completion,
    empty_stream,
    error,
    text,
    text_events,
    tool_events,
    tools,
)

READ = ("read_file", {"path": "timeparse.py"})


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "timeparse.py").write_text("def parse(s):\n    return int(s[:-1]) * 60\n")
    return root


def run(run_loop, server: FakeServer, ws: Path, *extra: str, task: str = "read timeparse.py",
        env: dict[str, str] | None = None):
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    "--no-checkpoints", *extra, task, env=env)
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert out and out[-1]["type"] == "result", (proc.stdout, proc.stderr)
    return proc, out


def notices(out: list[dict], kind: str) -> list[str]:
    return [e["text"] for e in out if e["type"] == "notice" and e["kind"] == kind]


def servers_file(loop_home: Path) -> dict:
    return json.loads((loop_home / "servers.json").read_text())["servers"]


# ---- non-streaming fallback ---------------------------------------------------------------------

def test_empty_body_falls_back_then_the_next_turn_and_the_next_run_go_non_streamed(run_loop, server, ws, loop_home):
    server.add(empty_stream(), completion(calls=[READ]), completion("It converts minutes to seconds."))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0, proc.stderr
    assert out[-1]["status"] == "completed"
    assert [r["stream"] for r in server.requests] == [True, False, False]  # one extra request, then remembered
    assert all("stream_options" not in r for r in server.requests[1:])
    result = next(e for e in out if e["type"] == "tool_result")
    assert result["name"] == "read_file" and not result["is_error"] and "int(s[:-1])" in result["content"]
    assert len(notices(out, "fallback")) == 1 and "without streaming" in notices(out, "fallback")[0]
    # The text of a non-streamed reply appears at once, with its usage.
    answer = [e for e in out if e["type"] == "assistant"][-1]
    assert answer["text"] == "It converts minutes to seconds."
    assert out[-1]["usage"] == {"prompt_tokens": 200, "completion_tokens": 20}  # two replies of 100/10
    (record,) = servers_file(loop_home).values()
    assert record["stream_tools"] is False and record["learned"]

    server.requests.clear()
    server.add(completion(calls=[READ]), completion("Same answer."))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0 and [r["stream"] for r in server.requests] == [False, False]
    assert notices(out, "fallback") == []


def test_a_request_without_tools_still_streams_on_a_server_that_cannot_stream_tools(run_loop, server, ws, loop_home):
    server.add(empty_stream(), completion("first"))
    run(run_loop, server, ws)
    # A compaction summary is sent without tools; the fallback is about tools only.
    from loopagent.cancel import Cancel
    from loopagent.client.openai import OpenAIClient
    from loopagent.messages import UserMessage
    from loopagent.servers import ServerBook

    server.add(text("plain"))
    client = OpenAIClient(base_url=server.url, model="default", servers=ServerBook(loop_home))
    try:
        assert client.complete([UserMessage("hi")], [], lambda e: None, Cancel()).text == "plain"
    finally:
        client.close()
    assert server.requests[-1]["stream"] is True


@pytest.mark.parametrize("message", [
    "Cannot use tools with stream",
    "Automatic streaming tool choice is not supported",
    "tools param requires --jinja flag",
])
def test_an_error_naming_streaming_with_tools_is_retried_once_without_streaming(run_loop, server, ws, message):
    server.add(error(500, message), completion(calls=[READ]), completion("done"))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0, proc.stderr
    assert [r["stream"] for r in server.requests] == [True, False, False]  # no backoff retries of the 500
    assert notices(out, "retry") == [] and len(notices(out, "fallback")) == 1
    assert message in notices(out, "fallback")[0]


def test_an_empty_answer_to_the_retry_stops_the_run_once(run_loop, server, ws, loop_home):
    server.add(empty_stream(), empty_stream(), text("never asked"))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 1 and out[-1]["status"] == "incomplete_model_turn"
    assert len(server.requests) == 2
    assert "also when sent without streaming" in out[-1]["message"]
    # nothing learned about streaming from a server that never answered (its context size is kept: probe)
    assert all("stream_tools" not in r for r in servers_file(loop_home).values())


def test_stream_tools_false_in_the_config_sends_tools_non_streamed_at_once(run_loop, server, ws, loop_home):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text('{"stream_tools": false}')
    server.add(completion(calls=[READ]), completion("done"))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0 and [r["stream"] for r in server.requests] == [False, False]
    assert notices(out, "fallback") == []


def test_a_corrupt_servers_file_is_a_notice_and_the_run_goes_on(run_loop, server, ws, loop_home):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "servers.json").write_text("{half a file")
    server.add(empty_stream(), completion(calls=[READ]), completion("done"))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0, proc.stderr
    assert "servers.json is not valid JSON; ignoring it" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert [r["stream_tools"] for r in servers_file(loop_home).values()] == [False]  # rewritten whole


# ---- tool calls written into the text -----------------------------------------------------------

RECOVERABLE = [
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "timeparse.py"}}\n</tool_call>',
    '<function=read_file>{"path": "timeparse.py"}</function>',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "timeparse.py"}}]',
    '{"name": "read_file", "arguments": "{\\"path\\": \\"timeparse.py\\"}"}',
]


@pytest.mark.parametrize("written", RECOVERABLE)
def test_a_call_written_into_the_text_runs_and_goes_back_as_a_tool_call(run_loop, server, ws, written):
    server.add(text(written), text("It parses minutes."))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0 and out[-1]["status"] == "completed", proc.stderr
    result = next(e for e in out if e["type"] == "tool_result")
    assert not result["is_error"] and "int(s[:-1])" in result["content"]
    assert len(notices(out, "recovered")) == 1 and "read_file" in notices(out, "recovered")[0]
    sent = server.requests[1]["messages"]
    assistant, tool = sent[-2], sent[-1]
    (call,) = assistant["tool_calls"]
    assert call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "timeparse.py"}
    assert call["id"].startswith("call_recovered_") and assistant["content"] == ""
    assert tool == {"role": "tool", "tool_call_id": call["id"], "content": tool["content"]}
    session = Path(next(e for e in out if e["type"] == "session")["path"])
    records = [json.loads(line) for line in session.read_text().splitlines()]
    marked = [r.get("recovered", False) for r in records if r.get("role") == "assistant"]
    assert marked == [True, False]  # the session says which turn's calls were recovered


@pytest.mark.parametrize("answer", [
    "You could call read_file on timeparse.py to see it.",
    '{"name": "delete_everything", "arguments": {"path": "."}}',
])
def test_a_mention_or_an_unknown_tool_stays_an_answer(run_loop, server, ws, answer):
    server.add(text(answer))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0 and out[-1]["status"] == "completed"
    assert len(server.requests) == 1 and notices(out, "recovered") == []
    assert not [e for e in out if e["type"] == "tool_call"]


def test_recovery_can_be_switched_off(run_loop, server, ws):
    server.add(text(RECOVERABLE[0]))
    proc, out = run(run_loop, server, ws, env={"LOOP_RECOVER_TEXT_CALLS": "false"})
    assert proc.returncode == 0 and len(server.requests) == 1
    assert not [e for e in out if e["type"] == "tool_call"]


def test_a_recovered_call_from_a_non_streamed_reply(run_loop, server, ws):
    # The two features together: a server that cannot stream tools and a model that writes calls as text.
    server.add(empty_stream(), completion(RECOVERABLE[1]), completion("done"))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0
    assert [e["name"] for e in out if e["type"] == "tool_result"] == ["read_file"]


# ---- replies cut at max_tokens ------------------------------------------------------------------

def test_a_cut_text_reply_is_told_once_then_the_run_goes_on(run_loop, server, ws):
    server.add(Reply(events=text_events("The file starts with a long", finish="length")), text("Short answer."))
    proc, out = run(run_loop, server, ws, env={"LOOP_MAX_TOKENS": "64"})
    assert proc.returncode == 0 and out[-1]["status"] == "completed", proc.stdout
    sent = server.requests[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": "The file starts with a long"}
    assert sent[-1]["role"] == "user"
    assert sent[-1]["content"].startswith("your reply was cut at the output limit of 64 tokens; nothing ran;")
    assert len(notices(out, "cut")) == 1


def test_a_cut_tool_call_runs_nothing_and_asks_for_smaller_pieces_then_stops_if_cut_again(run_loop, server, ws):
    big = ("write_file", {"path": "big.txt", "content": "x" * 200})
    server.add(Reply(events=tool_events(big, finish="length")), Reply(events=tool_events(big, finish="length")),
               text("never asked"))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 1 and out[-1]["status"] == "incomplete_model_turn"
    assert 'finish_reason "length"' in out[-1]["message"]
    assert len(server.requests) == 2
    note = server.requests[1]["messages"][-1]
    assert note["role"] == "user" and "write smaller pieces" in note["content"] and "4096 tokens" in note["content"]
    assert not (ws / "big.txt").exists() and not [e for e in out if e["type"] == "tool_call"]


def test_temperature_and_top_p_are_sent_only_when_configured(run_loop, server, ws):
    server.add(text("a"))
    run(run_loop, server, ws)
    assert "temperature" not in server.requests[0] and "top_p" not in server.requests[0]
    server.add(text("b"))
    run(run_loop, server, ws, env={"LOOP_TEMPERATURE": "0.2", "LOOP_TOP_P": "0.9"})
    assert server.requests[1]["temperature"] == 0.2 and server.requests[1]["top_p"] == 0.9


# ---- connection failures ------------------------------------------------------------------------

def test_each_connection_retry_is_a_notice_as_it_happens(run_loop, ws):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run_loop("agent", "-C", str(ws), "--base-url", f"http://127.0.0.1:{port}/v1", "--json", "hi",
                    env={"LOOP_RETRIES": "2"})
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 1 and out[-1]["status"] == "error"
    retries = notices(out, "retry")
    assert len(retries) == 2
    assert retries[0].startswith(f"cannot reach http://127.0.0.1:{port}/v1/chat/completions: connection refused; "
                                 "retrying (2/3) in ")
    assert retries[1].startswith(f"cannot reach http://127.0.0.1:{port}/v1") and "retrying (3/3) in " in retries[1]
    assert retries[0].endswith(" s")
    assert "(after 3 attempts)" in out[-1]["message"]


def test_a_busy_server_s_retries_are_notices_too(run_loop, server, ws):
    server.add(error(503, "loading model", {"Retry-After": "0"}), text("ok"))
    proc, out = run(run_loop, server, ws)
    assert proc.returncode == 0
    assert notices(out, "retry") == [f"HTTP 503 from {server.url}/chat/completions; retrying (2/5) in 0.0 s"]
    assert tools  # the helper stays imported for the shapes above
