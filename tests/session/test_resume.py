"""Sessions end to end: the file a run writes, a crash (SIGKILL) and --resume with repair, corruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import text, tools

KEY = "sk-session-test-key"


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def agent(run_loop, server, ws: Path, *extra: str):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--api-key", KEY, "--json", *extra)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def session_of(proc: subprocess.CompletedProcess[str]) -> Path:
    first = events(proc.stdout)[0]
    assert first["type"] == "session" and Path(first["path"]).stem == first["id"]
    return Path(first["path"])


def test_every_message_is_a_line_and_the_key_is_never_written(run_loop, server, sample, loop_home):
    server.add(tools(("read_file", {"path": "path_rules.py"})), text("It selects Python sources."))
    proc = agent(run_loop, server, sample, "What does path_rules do?")
    assert proc.returncode == 0, proc.stderr
    path = session_of(proc)
    assert path.parent.parent == loop_home / "sessions"
    assert path.parent.name.startswith("sample-") and path.name.endswith("-what-does-path-rules-do.jsonl")
    recs = records(path)
    head = recs[0]
    assert head["type"] == "header" and head["schema"] == 1
    assert head["workspace"] == os.path.realpath(sample) and head["base_url"] == server.url
    assert head["model"] == "default" and head["loop_version"] and head["created"].endswith("Z")
    messages = [r for r in recs if r["type"] == "message"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [m["index"] for m in messages] == [0, 1, 2, 3, 4]
    assert messages[2]["tool_calls"] == [{"id": "call_0_read_file", "name": "read_file",
                                          "arguments": '{"path": "path_rules.py"}'}]
    assert "def python_sources" in messages[3]["content"]  # the full result the model saw
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "completed"
    assert KEY not in path.read_text(encoding="utf-8")

    listed = run_loop("sessions", "-C", str(sample))
    assert listed.returncode == 0
    assert path.stem in listed.stdout and "2 steps" in listed.stdout and "completed" in listed.stdout
    assert "What does path_rules do?" in listed.stdout


def test_sigkill_during_a_slow_shell_call_then_resume(run_loop, server, sample, loop_home):
    server.add(tools(("shell", {"command": "echo $$ > shell.pid && exec sleep 30"})))
    cmd = [sys.executable, "-m", "loopagent", "agent", "-C", str(sample), "--base-url", server.url,
           "--api-key", KEY, "--json", "--approval", "all", *where_shells_run(), "run the slow thing"]
    proc = subprocess.Popen(cmd, env=clean_env(loop_home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    pid_file, shell_pid = sample / "shell.pid", None
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the shell call never started"
            time.sleep(0.02)
        shell_pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
    finally:
        proc.kill()
        if shell_pid:
            try:
                os.kill(shell_pid, signal.SIGKILL)  # the shell ran in its own session: not killed with loop
            except ProcessLookupError:
                pass
    assert proc.returncode == -signal.SIGKILL
    first_path = Path(events(out.decode())[0]["path"])

    server.add(text("The command was interrupted; shell.pid exists, so I will not rerun it blindly."))
    resumed = agent(run_loop, server, sample, "--resume", "last")
    assert resumed.returncode == 0, resumed.stderr
    assert session_of(resumed) == first_path  # resuming appends to the same file
    repairs = [ln for ln in resumed.stderr.splitlines() if ln.startswith("repair:")]
    assert len(repairs) == 1 and "call_0_shell" in repairs[0]

    before, after = server.requests[0]["messages"], server.requests[1]["messages"]
    assert after[:len(before)] == before  # byte-for-byte the history the model saw
    assistant, tool, user = after[len(before):]
    assert assistant["tool_calls"][0]["id"] == "call_0_shell" and assistant["content"] == ""
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_0_shell"
    assert "session ended before this call finished" in tool["content"]
    assert "Check the workspace" in tool["content"]
    assert user == {"role": "user", "content": "Continue."}
    recs = records(first_path)
    assert [r["type"] for r in recs].count("repair") == 1
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "completed"


def test_truncated_last_line_resumes_with_one_repair(run_loop, server, sample):
    server.add(tools(("read_file", {"path": "README.md"})), text("A short answer that gets cut off."))
    first = agent(run_loop, server, sample, "read the readme")
    assert first.returncode == 0
    path = session_of(first)
    lines = path.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "end"
    # A crash while writing the final answer: the end record never came, the answer is half a line.
    path.write_bytes(b"".join(lines[:-2]) + lines[-2][:30])

    server.add(text("resumed"))
    resumed = agent(run_loop, server, sample, "--resume", path.stem, "and now the tests?")
    assert resumed.returncode == 0, resumed.stderr
    repairs = [ln for ln in resumed.stderr.splitlines() if ln.startswith("repair:")]
    assert len(repairs) == 1 and "incomplete last line" in repairs[0]
    sent = server.requests[2]["messages"]
    assert sent[:4] == server.requests[1]["messages"]
    assert sent[4] == {"role": "user", "content": "and now the tests?"}
    recs = records(path)  # every line parses again: the torn bytes were cut, and kept in the repair record
    repair = [r for r in recs if r["type"] == "repair"][0]
    assert repair["dropped"] == lines[-2][:30].decode()
    assert [r["index"] for r in recs if r["type"] == "message"] == [0, 1, 2, 3, 4, 5]


def test_garbage_in_a_middle_line_refuses(run_loop, server, sample):
    server.add(tools(("read_file", {"path": "README.md"})), text("done"))
    first = agent(run_loop, server, sample, "read the readme")
    path = session_of(first)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"type":"message","index":2,"role":"assis\x00garbage\n'
    path.write_bytes(b"".join(lines))
    before = path.read_bytes()

    resumed = agent(run_loop, server, sample, "--resume", str(path))
    assert resumed.returncode == 1
    assert f"{path} line 4" in resumed.stderr and "corrupt" in resumed.stderr
    assert "Traceback" not in resumed.stderr
    result = events(resumed.stdout)[-1]
    assert result["type"] == "result" and result["status"] == "error" and "line 4" in result["message"]
    assert path.read_bytes() == before  # refused, not "fixed"
    assert len(server.requests) == 2


def test_resume_without_sessions_is_exit_2(run_loop, server, sample):
    proc = agent(run_loop, server, sample, "--resume", "last")
    assert proc.returncode == 2 and "no saved sessions" in proc.stderr  # a bad argument, as for `loop export`
    assert events(proc.stdout)[-1]["status"] == "error"


def test_a_session_that_cannot_be_written_is_an_error_result(run_loop, server, sample, loop_home):
    loop_home.mkdir(parents=True)
    (loop_home / "sessions").write_text("a file where the sessions directory should be")
    server.add(text("never asked"))
    proc = agent(run_loop, server, sample, "hello")
    assert proc.returncode == 1
    out = events(proc.stdout)
    assert out[-1]["type"] == "result" and out[-1]["status"] == "error"
    assert "session" in out[-1]["message"]
    assert server.requests == []  # nothing runs without a record


def test_resume_by_id_prefix_or_path(run_loop, server, sample):
    server.add(text("one"), text("two"), text("three"), text("four"))
    path = session_of(agent(run_loop, server, sample, "first task"))
    agent(run_loop, server, sample, "second task")
    by_prefix = agent(run_loop, server, sample, "--resume", path.stem[:-3], "more")
    assert by_prefix.returncode == 0, by_prefix.stderr
    by_path = agent(run_loop, server, sample, "--resume", str(path), "again")
    assert session_of(by_prefix) == session_of(by_path) == path
    users = [m["content"] for m in server.requests[3]["messages"] if m["role"] == "user"]
    assert users == ["first task", "more", "again"]
