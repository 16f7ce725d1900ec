"""Ollama's native API end to end: the real `loop` with provider ollama against a fake /api/chat.

What must reach Ollama: `options.num_ctx` (the reason the adapter exists), `num_predict`, messages in
Ollama's shape (call arguments as objects, results named by their tool). What must come back: text,
whole tool calls, usage from the final object, a cut reply, a missing model with its fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakeollama import FakeOllama, OllamaReply, error, text, text_lines, tools

OLLAMA = {"LOOP_PROVIDER": "ollama"}


@pytest.fixture
def ollama():
    with FakeOllama() as srv:
        yield srv


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "timeparse.py").write_text("def parse(s):\n    return int(s[:-1]) * 60\n")
    return root


def run(run_loop, srv: FakeOllama, ws: Path, *extra: str, task: str = "read timeparse.py", env=None):
    proc = run_loop("agent", "-C", str(ws), "--base-url", srv.url, "-m", "qwen3:4b", "--json", "--approval", "all",
                    "--no-checkpoints", *extra, task, env={**OLLAMA, **(env or {})})
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert out and out[-1]["type"] == "result", (proc.stdout, proc.stderr)
    return proc, out


def test_a_text_turn_sends_num_ctx_and_reports_usage(run_loop, ollama, ws):
    ollama.add(text("It parses durations."))
    proc, out = run(run_loop, ollama, ws, "--ctx-size", "8192", task="hi")
    assert proc.returncode == 0, proc.stderr
    assert ollama.paths[-1] == "POST /api/chat"
    (req,) = ollama.requests
    assert req["model"] == "qwen3:4b" and req["stream"] is True
    assert req["options"] == {"num_ctx": 8192, "num_predict": 4096}  # no sampling settings unless configured
    assert "tool_choice" not in req and "stream_options" not in req and "max_tokens" not in req
    assert {t["function"]["name"] for t in req["tools"]} >= {"read_file", "write_file", "shell"}
    assert [m["role"] for m in req["messages"]] == ["system", "user"]
    assert req["messages"][1]["content"] == "hi"
    answer = [e for e in out if e["type"] == "assistant"][-1]
    assert answer["text"] == "It parses durations."
    assert out[-1]["status"] == "completed"
    assert out[-1]["usage"] == {"prompt_tokens": 120, "completion_tokens": 12}


def test_a_tool_turn_then_a_text_turn_in_ollamas_message_shape(run_loop, ollama, ws):
    ollama.add(tools(("read_file", {"path": "timeparse.py"})), text("It converts minutes to seconds."))
    proc, out = run(run_loop, ollama, ws, "--ctx-size", "12000")
    assert proc.returncode == 0, proc.stderr
    call = next(e for e in out if e["type"] == "tool_call")
    assert call["name"] == "read_file" and call["id"]  # Ollama sends no id: the client gives one
    result = next(e for e in out if e["type"] == "tool_result")
    assert result["id"] == call["id"] and not result["is_error"] and "int(s[:-1])" in result["content"]
    assert len(ollama.requests) == 2
    second = ollama.requests[1]
    assert second["options"]["num_ctx"] == 12000
    assistant, tool = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": "",
                         "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "timeparse.py"}}}]}
    assert tool["role"] == "tool" and tool["tool_name"] == "read_file" and "int(s[:-1])" in tool["content"]
    assert "tool_call_id" not in tool
    assert out[-1]["status"] == "completed"
    assert out[-1]["usage"] == {"prompt_tokens": 240, "completion_tokens": 24}


def test_sampling_settings_go_in_options(run_loop, ollama, ws, loop_home):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"temperature": 0.2, "top_p": 0.9, "max_tokens": 512}))
    ollama.add(text("ok"))
    proc, _ = run(run_loop, ollama, ws, "--ctx-size", "4096", task="hi")
    assert proc.returncode == 0, proc.stderr
    assert ollama.requests[0]["options"] == {"num_ctx": 4096, "num_predict": 512, "temperature": 0.2, "top_p": 0.9}


def test_a_model_ollama_does_not_have_says_how_to_pull_it(run_loop, ollama, ws):
    ollama.add(error(404, "model \"qwen3:4b\" not found, try pulling it first"))
    proc, out = run(run_loop, ollama, ws, "--ctx-size", "8192", task="hi")
    assert proc.returncode == 1
    assert out[-1]["status"] == "model_error"
    said = proc.stderr + json.dumps(out[-1])
    assert "HTTP 404" in said and "ollama pull qwen3:4b" in said
    assert len(ollama.requests) == 1  # a 404 is not retried
    assert "Traceback" not in proc.stderr


def test_a_reply_cut_at_num_predict_runs_nothing_and_the_model_is_told_once(run_loop, ollama, ws):
    ollama.add(OllamaReply(lines=text_lines("A long answer that", done_reason="length")),
               OllamaReply(lines=text_lines("Still too long", done_reason="length")))
    proc, out = run(run_loop, ollama, ws, "--ctx-size", "8192", task="hi")
    assert proc.returncode == 1
    assert out[-1]["status"] == "incomplete_model_turn"
    assert len(ollama.requests) == 2
    told = ollama.requests[1]["messages"][-1]
    assert told["role"] == "user" and "cut at the output limit of 4096 tokens" in told["content"]


def test_provider_ollama_defaults_to_ollamas_port(run_loop, ws):
    proc = run_loop("config", "-C", str(ws), env=OLLAMA)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.lstrip().startswith("base_url"))
    assert "http://127.0.0.1:11434" in line and "provider ollama" in line
    proc = run_loop("config", "-C", str(ws), env={**OLLAMA, "LOOP_BASE_URL": "http://10.0.0.5:11434"})
    line = next(x for x in proc.stdout.splitlines() if x.lstrip().startswith("base_url"))
    assert "http://10.0.0.5:11434" in line  # a given URL wins


def test_an_unknown_provider_is_one_line_and_exit_2(run_loop, ws):
    proc = run_loop("agent", "-C", str(ws), "--json", "hi", env={"LOOP_PROVIDER": "anthropic"})
    assert proc.returncode == 2
    assert "provider" in proc.stderr and "Traceback" not in proc.stderr


def test_ctx_size_auto_asks_api_show_and_sends_that_as_num_ctx(run_loop, ollama, ws):
    ollama.show = {"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}}
    ollama.add(text("ok"))
    proc, out = run(run_loop, ollama, ws, task="hi")
    assert proc.returncode == 0, proc.stderr
    session = next(e for e in out if e["type"] == "session")
    assert session["ctx_size"] == 40960 and session["ctx_source"].startswith("server")
    assert "POST /api/show" in ollama.paths
    assert ollama.requests[0]["options"]["num_ctx"] == 40960  # the size in force is the size Ollama is told


def test_ctx_size_auto_without_an_answer_still_sends_the_default_as_num_ctx(run_loop, ollama, ws):
    ollama.add(text("ok"))  # /api/show answers 404: Ollama would otherwise cut to its own default
    proc, out = run(run_loop, ollama, ws, task="hi")
    assert proc.returncode == 0, proc.stderr
    session = next(e for e in out if e["type"] == "session")
    assert ollama.requests[0]["options"]["num_ctx"] == session["ctx_size"] == 16384


def test_doctor_with_provider_ollama_speaks_api_chat(run_loop, ollama, ws):
    ollama.show = {"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}}
    ollama.add(text("hello"), tools(("get_weather", {"city": "Paris"})), tools(("get_weather", {"city": "Paris"})))
    proc = run_loop("doctor", "--provider", "ollama", "--base-url", ollama.url, "-m", "fake", env=OLLAMA)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p for p in ollama.paths if p.endswith("/api/chat")] == ["POST /api/chat"] * 4
    assert [r["stream"] for r in ollama.requests] == [True, True, False, True]
    assert "format" in ollama.requests[3]  # the fourth asks whether a JSON Schema shapes the reply
    assert "40960" in proc.stdout
