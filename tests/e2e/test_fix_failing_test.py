"""The loop end to end: the real CLI against the fake server, real files, real pytest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import Reply, error, text, text_events, tool_events, tools

FIX_OLD = "        path = PurePosixPath(name)\n"
FIX_NEW = '        path = PurePosixPath(name.replace("\\\\", "/"))\n'


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def sample_passes(ws: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ws,
                          capture_output=True, text=True, timeout=60)


def agent(run_loop, server, ws: Path, *extra: str, task: str = "fix the failing test"):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--api-key", "sk-dummy-test",
                    "--json", *extra, task)


def test_sample_repair_end_to_end(run_loop, server, sample):
    server.add(
        tools(("read_file", {"path": "path_rules.py"})),
        tools(("edit_file", {"path": "path_rules.py", "old_string": FIX_OLD, "new_string": FIX_NEW})),
        tools(("shell", {"command": f"{sys.executable} -m pytest -q -p no:cacheprovider"})),
        text("Fixed: backslashes are normalised; 4 tests pass."),
    )
    assert sample_passes(sample).returncode == 1
    proc = agent(run_loop, server, sample, "--approval", "all", *where_shells_run())
    assert proc.returncode == 0, proc.stderr
    out = events(proc.stdout)
    assert out[-1]["type"] == "result" and out[-1]["status"] == "completed" and out[-1]["steps"] == 4
    assert out[-1]["usage"] == {"prompt_tokens": 400, "completion_tokens": 40}
    shell_result = [e for e in out if e["type"] == "tool_result" and e["name"] == "shell"][0]
    assert not shell_result["is_error"] and "4 passed" in shell_result["content"]
    assert sample_passes(sample).returncode == 0

    second = server.requests[1]
    assistant, tool_msg = second["messages"][2], second["messages"][3]
    call = assistant["tool_calls"][0]
    assert assistant["content"] == "" and call["function"]["name"] == "read_file"
    assert tool_msg == {"role": "tool", "tool_call_id": call["id"], "content": tool_msg["content"]}
    assert "def python_sources(changed_paths):" in tool_msg["content"]
    # The wire contract every request must keep.
    for body in server.requests:
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        assert body["tool_choice"] == "auto" and body["max_tokens"] == 4096
        assert body["messages"][0]["role"] == "system"
    assert server.headers[0]["Authorization"] == "Bearer sk-dummy-test"
    assert "sk-dummy-test" not in proc.stdout + proc.stderr


def test_stream_without_finish_reason_runs_no_tool(run_loop, server, sample):
    server.add(Reply(events=tool_events(("write_file", {"path": "new.txt", "content": "x"}), finish=None)))
    proc = agent(run_loop, server, sample, "--approval", "all")
    assert proc.returncode == 1
    out = events(proc.stdout)
    assert out[-1]["status"] == "incomplete_model_turn"
    assert not any(e["type"] == "tool_result" for e in out)
    assert not (sample / "new.txt").exists()


def test_empty_stream_is_an_incomplete_turn_not_a_retry(run_loop, server, sample):
    # A streamed request with tools gets one non-streamed retry (the fallback); empty again, it stops.
    server.add(Reply(events=[], done=False), Reply(events=[], done=False))
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 1
    assert events(proc.stdout)[-1]["status"] == "incomplete_model_turn"
    assert len(server.requests) == 2 and server.requests[1]["stream"] is False


def test_length_finish_with_tool_call_runs_no_tool(run_loop, server, sample):
    # Cut twice: the model is told once (see tests/client/test_local_servers_e2e.py), then the run stops.
    cut = Reply(events=tool_events(("write_file", {"path": "new.txt", "content": "x"}), finish="length"))
    server.add(cut, cut)
    proc = agent(run_loop, server, sample, "--approval", "all")
    assert proc.returncode == 1
    assert events(proc.stdout)[-1]["status"] == "incomplete_model_turn"
    assert not (sample / "new.txt").exists()


def test_unknown_tool_becomes_error_result_in_next_request(run_loop, server, sample):
    server.add(tools(("delete_everything", {"path": "."})), text("sorry"))
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 0
    tool_msg = server.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and "unknown tool 'delete_everything'" in tool_msg["content"]
    assert "read_file" in tool_msg["content"]  # it names the tools that exist


def test_arguments_that_are_not_json(run_loop, server, sample):
    server.add(tools(("write_file", '{"path": "a.txt", "content": ')), text("ok"))
    proc = agent(run_loop, server, sample, "--approval", "all")
    assert proc.returncode == 0
    assert "not valid JSON" in server.requests[1]["messages"][-1]["content"]
    assert not (sample / "a.txt").exists()


def test_arguments_of_the_wrong_type(run_loop, server, sample):
    server.add(tools(("write_file", {"path": "a.txt", "content": ["not", "a", "string"]})), text("ok"))
    proc = agent(run_loop, server, sample, "--approval", "all")
    assert proc.returncode == 0
    msg = server.requests[1]["messages"][-1]["content"]
    assert "invalid arguments for write_file" in msg and "content" in msg
    assert not (sample / "a.txt").exists()


def test_tool_raising_becomes_error_result(run_loop, server, sample):
    # Reading a directory makes the tool fail; the loop turns it into a result and goes on.
    server.add(tools(("read_file", {"path": "tests"})), text("done"))
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 0
    result = [e for e in events(proc.stdout) if e["type"] == "tool_result"][0]
    assert result["is_error"] and "directory" in result["content"]


def test_server_500_then_success_is_retried(run_loop, server, sample):
    server.add(error(500, "overloaded"), error(503, "busy", {"Retry-After": "0"}), text("hello"))
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 3
    assert events(proc.stdout)[-1]["status"] == "completed"


def test_server_401_fails_at_once_with_its_message(run_loop, server, sample):
    server.add(error(401, "invalid api key"), text("never sent"))
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 1
    result = events(proc.stdout)[-1]
    assert result["status"] == "error" and "401" in result["message"]  # a refused key is not the model's fault
    assert "invalid api key" in result["message"]
    assert len(server.requests) == 1


def test_connection_refused_names_the_url(run_loop, sample, tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    proc = run_loop("agent", "-C", str(sample), "--base-url", url, "--json", "hi",
                    env={"LOOP_RETRIES": "1"})
    assert proc.returncode == 1
    result = events(proc.stdout)[-1]
    assert result["status"] == "error"  # an unreachable server is not the model's fault
    assert f"127.0.0.1:{port}/v1/chat/completions" in result["message"]
    assert "connection refused" in result["message"]


def test_step_limit_stops_a_model_that_keeps_calling_tools(run_loop, server, sample):
    for _ in range(5):
        server.add(tools(("read_file", {"path": "path_rules.py"})))
    proc = agent(run_loop, server, sample, "--max-steps", "2")
    assert proc.returncode == 3
    out = events(proc.stdout)
    assert out[-1]["status"] == "step_limit" and out[-1]["steps"] == 2
    assert len(server.requests) == 2
    # The last turn's call still got its result: the history stays valid.
    assert [e["type"] for e in out[-3:]] == ["tool_call", "tool_result", "result"]


def test_invalid_approval_is_a_usage_error(run_loop, sample):
    proc = run_loop("agent", "-C", str(sample), "--approval", "yolo", "task")
    assert proc.returncode == 2
    assert "yolo" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_workspace_is_one_line_exit_2(run_loop, tmp_path):
    proc = run_loop("agent", "-C", str(tmp_path / "nope"), "task")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "not a directory" in proc.stderr


def test_stream_error_object_is_a_model_error(run_loop, server, sample):
    server.add(Reply(events=text_events("partial", finish=None)[:2] + [{"error": {"message": "out of memory"}}]))
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 1
    result = events(proc.stdout)[-1]
    assert result["status"] == "model_error" and "out of memory" in result["message"]


def test_plain_output_for_people(run_loop, server, sample):
    server.add(tools(("read_file", {"path": "path_rules.py"})), text("All good."))
    proc = run_loop("agent", "-C", str(sample), "--base-url", server.url, "read it")
    assert proc.returncode == 0
    assert "[1] read_file path_rules.py" in proc.stdout
    assert "ok:" in proc.stdout and "All good." in proc.stdout
    assert "done: completed, 2 steps, 200+20 tokens" in proc.stdout


def test_unexpected_tool_exception_becomes_error_result(run_loop, server, sample):
    # The parent "directory" is a regular file: creating it raises inside the tool.
    server.add(tools(("write_file", {"path": "path_rules.py/inner.txt", "content": "x"})), text("gave up"))
    proc = agent(run_loop, server, sample, "--approval", "all")
    assert proc.returncode == 0
    result = [e for e in events(proc.stdout) if e["type"] == "tool_result"][0]
    assert result["is_error"] and result["id"] == server.requests[1]["messages"][-1]["tool_call_id"]
    assert (sample / "path_rules.py").is_file()
